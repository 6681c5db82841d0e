#!/usr/bin/env node
// Builds src/generated/lua.ts from lua/<name>-<numKeys>.lua: inlines its
// `--@include "x"` lines (lua/includes/x.lua, which may include others) and expands its
// `--@keys` line. With --check it fails when the generated module is stale (CI runs it).
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { inlineHelpers } from "./lua-inline.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const luaDir = join(root, "lua");
const outFile = join(root, "src", "generated", "lua.ts");

const INCLUDE = /^--@include "([a-zA-Z0-9_-]+)"$/gm;

/** The include names that the `--@include "x"` lines of a text name, in order. */
const includeLines = (text) => [...text.matchAll(INCLUDE)].map((m) => m[1]);

/**
 * The includes a text needs, each once, every include after the includes it names
 * itself (a helper is defined before the helpers that call it).
 */
function includeOrder(names, order = [], visiting = []) {
  for (const name of names) {
    if (order.some((i) => i.name === name)) continue;
    if (visiting.includes(name)) throw new Error(`lua/includes: ${[...visiting, name].join(" -> ")} is a cycle`);
    const text = readFileSync(join(luaDir, "includes", `${name}.lua`), "utf8");
    const named = includeLines(text);
    includeOrder(named, order, [...visiting, name]);
    order.push({ name, named, text: text.replace(/^--@include "[a-zA-Z0-9_-]+"\n/gm, "") });
  }
  return order;
}

/**
 * Splits an include into its top-level definitions: a chunk starts at a column-0
 * `local` line and takes the column-0 comments and blank lines right above it; what
 * comes before the first one is the header. Each chunk knows the names it defines.
 */
function chunksOf(include) {
  const header = [];
  const chunks = [];
  let pending = [];
  let inComment = false;
  for (const line of include.split("\n")) {
    if (inComment) {
      pending.push(line);
      if (line.includes("]]")) inComment = false;
      continue;
    }
    if (line.startsWith("--[[")) {
      pending.push(line);
      inComment = !line.includes("]]");
      continue;
    }
    if (line === "" || line.startsWith("--")) {
      pending.push(line);
      continue;
    }
    const fn = /^local\s+function\s+([A-Za-z_]\w*)/.exec(line);
    const vars = /^local\s+([A-Za-z_][\w\s,]*?)\s*=/.exec(line);
    if (fn || vars) {
      const names = fn ? [fn[1]] : vars[1].split(",").map((n) => n.trim());
      chunks.push({ names, lines: [...pending, line] });
      pending = [];
    } else if (chunks.length === 0) {
      header.push(...pending, line);
      pending = [];
    } else {
      chunks.at(-1).lines.push(...pending, line);
      pending = [];
    }
  }
  if (chunks.length === 0) header.push(...pending);
  else chunks.at(-1).lines.push(...pending);
  return { header: header.join("\n"), chunks };
}

/** The identifiers of Lua code, its comments left out. */
const identifiers = (text) =>
  new Set(
    text
      .replace(/--\[\[[\s\S]*?\]\]/g, "")
      .replace(/--.*$/gm, "")
      .match(/[A-Za-z_]\w*/g) ?? [],
  );

/**
 * The includes with only the definitions the script uses, directly or through other
 * definitions: Redis runs a script's whole text on every call, so every unused helper
 * (a closure or a table made per call) would cost each call. An include none of whose
 * definitions is used is left out with its doc comment (the `--[[ ]]` it starts with).
 * A name has one home: defined twice in the includes of a script, or used by an include
 * that does not include (directly or through others) the include defining it, is an error.
 */
function shake(file, includes, body) {
  const parsed = includes.map((inc) => {
    const doc = /^--\[\[[\s\S]*?\]\]\n/.exec(inc.text)?.[0] ?? "";
    return { ...inc, doc: doc.trim(), ...chunksOf(inc.text.slice(doc.length)) };
  });
  const byName = new Map();
  const home = new Map();
  for (const inc of parsed) {
    for (const c of inc.chunks) {
      for (const n of c.names) {
        if (home.has(n)) throw new Error(`lua/${file}: ${n} is defined in includes ${home.get(n)} and ${inc.name}`);
        byName.set(n, c);
        home.set(n, inc.name);
      }
    }
  }
  const reach = new Map();
  const reachable = (name) => {
    if (!reach.has(name)) {
      const inc = parsed.find((i) => i.name === name);
      reach.set(name, new Set([name, ...inc.named.flatMap((n) => [...reachable(n)])]));
    }
    return reach.get(name);
  };
  for (const inc of parsed) {
    for (const id of identifiers(inc.text)) {
      if (home.has(id) && !reachable(inc.name).has(home.get(id))) {
        throw new Error(`lua/includes/${inc.name}.lua uses ${id} of ${home.get(id)}.lua without including it`);
      }
    }
  }
  const needed = new Set();
  const visit = (text) => {
    for (const id of identifiers(text)) {
      const c = byName.get(id);
      if (c && !needed.has(c)) {
        needed.add(c);
        visit(c.lines.join("\n"));
      }
    }
  };
  visit(body);
  const parts = [];
  for (const inc of parsed) {
    const kept = inc.chunks.filter((c) => needed.has(c)).map((c) => c.lines.join("\n"));
    const text = [inc.doc, inc.header, ...kept].filter((t) => t !== "").join("\n");
    if (kept.length > 0) parts.push(text.replace(/\n{3,}/g, "\n\n").trim());
  }
  return parts.join("\n\n");
}

/**
 * A script's `--@keys` line as the table of its KEYS under the names its header gives
 * them (`keys.waits` = KEYS[1], ...), so their order is written once, in the header. A
 * body that reads KEYS[n] itself is refused.
 */
function keysTable(file, source, keyNames) {
  const body = source.slice(source.indexOf("]]"));
  if (/KEYS\[/.test(body)) throw new Error(`lua/${file}: the body reads KEYS[n]; use --@keys and keys.<name>`);
  const markers = [...source.matchAll(/^--@keys$/gm)].length;
  if (markers > 1) throw new Error(`lua/${file}: more than one --@keys line`);
  // a last rest name takes the KEYS after the named ones, as a list
  const fields = keyNames
    .map((n, i) => (n.startsWith("...") ? `${n.slice(3)} = { unpack(KEYS, ${i + 1}) }` : `${n} = KEYS[${i + 1}]`))
    .join(", ");
  return source.replace(/^--@keys$/m, `local keys = { ${fields} }`);
}

/** The script's text with its includes (only the helpers it uses) where its first `--@include` line was. */
function withIncludes(file, source) {
  const names = includeLines(source);
  if (names.length === 0) return source;
  let placed = false;
  const marked = source.replace(/^--@include "[a-zA-Z0-9_-]+"\n/gm, () => {
    if (placed) return "";
    placed = true;
    return "\u0000\n";
  });
  const body = marked.replace("\u0000", "");
  return marked.replace("\u0000", () => shake(file, includeOrder(names), body));
}

/**
 * A script as Redis runs it: its `--@keys` line expanded, its includes inlined and their
 * `--@inline` helpers written at their call sites (scripts/lua-inline.mjs). Every
 * keys.<name> it reads, its helpers' too, must be one of its header's KEYS.
 */
function build(file, source, keyNames) {
  const lua = inlineHelpers(file, withIncludes(file, keysTable(file, source, keyNames)));
  const code = lua.replace(/--\[\[[\s\S]*?\]\]/g, "").replace(/--.*$/gm, "");
  const names = keyNames.map((n) => n.replace(/^\.\.\./, ""));
  for (const m of code.matchAll(/\bkeys\.([A-Za-z_]\w*)/g)) {
    if (!names.includes(m[1])) throw new Error(`lua/${file}: keys.${m[1]} is not in the header's KEYS`);
  }
  return lua;
}

/**
 * The script's KEYS and ARGV as its header comment lists them (`  KEYS[i] name …`,
 * `  ARGV[i] name …`, a last `ARGV[i..] name` taking the rest): the one place their order
 * is written. The generated module carries the names, so the TypeScript side builds
 * each call from them (src/transitions) and never repeats the order.
 */
function signature(file, source, numberOfKeys) {
  const header = source.slice(0, source.indexOf("]]"));
  const keyNames = [];
  const argNames = [];
  for (const m of header.matchAll(/^ {2}(KEYS|ARGV)\[(\d+)(\.\.)?\]\s+([A-Za-z]\w*)/gm)) {
    const [, kind, index, rest, name] = m;
    const list = kind === "KEYS" ? keyNames : argNames;
    if (Number(index) !== list.length + 1) throw new Error(`lua/${file}: ${kind}[${index}] out of order`);
    if (list.at(-1)?.startsWith("...")) throw new Error(`lua/${file}: ${kind}[${index}] after a rest argument`);
    list.push(rest ? `...${name}` : name);
  }
  // (a rest of KEYS is not counted: the name says how many keys every call has)
  const named = keyNames.filter((n) => !n.startsWith("...")).length;
  if (named !== numberOfKeys) {
    throw new Error(`lua/${file}: the header lists ${named} KEYS, the name says ${numberOfKeys}`);
  }
  const used = Math.max(0, ...[...source.matchAll(/ARGV\[(\d+)\]/g)].map((m) => Number(m[1])));
  if (!argNames.at(-1)?.startsWith("...") && used > argNames.length) {
    throw new Error(`lua/${file}: the body reads ARGV[${used}], the header lists ${argNames.length}`);
  }
  return { keyNames, argNames };
}

/**
 * The outcome codes, read from the `local C_NAME, … = n, …` lines of every include (the
 * Lua side is their one home): the generated module exports them as `Code`.
 */
function replyCodes() {
  const dir = join(luaDir, "includes");
  const codes = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".lua"))
    .sort()) {
    const source = readFileSync(join(dir, file), "utf8");
    for (const m of source.matchAll(
      /^local\s+(C_[A-Z_]+(?:\s*,\s*C_[A-Z_]+)*)\s*=\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*(?:--.*)?$/gm,
    )) {
      const names = m[1].split(",").map((n) => n.trim().slice(2));
      const values = m[2].split(",").map((v) => Number(v.trim()));
      if (names.length !== values.length)
        throw new Error(`lua/includes/${file}: ${m[0]}: names and values differ in number`);
      names.forEach((n, i) => {
        if (codes.some(([known]) => known === n)) throw new Error(`lua/includes/${file}: C_${n} defined twice`);
        codes.push([n, values[i]]);
      });
    }
  }
  if (codes.length === 0) throw new Error("lua/includes: no `local C_NAME = n` outcome codes found");
  return codes;
}

const entries = readdirSync(luaDir)
  .filter((f) => f.endsWith(".lua"))
  .sort()
  .map((file) => {
    const match = /^([a-zA-Z]+)-(\d+)\.lua$/.exec(file);
    if (!match) throw new Error(`lua/${file}: name must be <transition>-<numKeys>.lua`);
    const [, name, keys] = match;
    const source = readFileSync(join(luaDir, file), "utf8");
    const { keyNames, argNames } = signature(file, source, Number(keys));
    const lua = build(file, source, keyNames);
    const version = createHash("sha256").update(lua).digest("hex").slice(0, 10);
    return { name, numberOfKeys: Number(keys), command: `rdv_${name}_${version}`, keyNames, argNames, lua };
  });

let out = "// GENERATED by scripts/build-lua.mjs from lua/*.lua. Do not edit: run `npm run lua:build`.\n";
out += "export const luaScripts = {\n";
for (const e of entries) {
  out += `  ${e.name}: {\n    numberOfKeys: ${e.numberOfKeys},\n    command: ${JSON.stringify(e.command)},\n`;
  out += `    keys: ${JSON.stringify(e.keyNames)},\n    argv: ${JSON.stringify(e.argNames)},\n`;
  out += `    lua: ${JSON.stringify(e.lua)},\n  },\n`;
}
out += "} as const;\n\nexport type ScriptName = keyof typeof luaScripts;\n";
out += "\n/** Outcome codes of the Lua transitions (first element of a reply), from lua/includes. */\n";
out += "export const Code = {\n";
for (const [name, value] of replyCodes()) out += `  ${name}: ${value},\n`;
out += "} as const;\n";

if (process.argv.includes("--check")) {
  let current = "";
  try {
    current = readFileSync(outFile, "utf8");
  } catch {}
  if (current !== out) {
    console.error("src/generated/lua.ts is stale: run `npm run lua:build` and commit the result.");
    process.exit(1);
  }
  console.log(`lua: ${entries.length} scripts, generated module up to date`);
} else {
  mkdirSync(dirname(outFile), { recursive: true });
  writeFileSync(outFile, out);
  console.log(`lua: wrote ${entries.length} scripts to src/generated/lua.ts`);
}
