#!/usr/bin/env node
// Builds src/generated/lua.ts from lua/<name>-<numKeys>.lua, inlining
// `--@include "x"` lines from lua/includes/x.lua. With --check it fails when the
// generated module is stale (CI runs it).
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const luaDir = join(root, "lua");
const outFile = join(root, "src", "generated", "lua.ts");

function inline(source, seen = new Set()) {
  return source.replace(/^--@include "([a-zA-Z0-9_-]+)"$/gm, (_, name) => {
    if (seen.has(name)) return "";
    seen.add(name);
    return inline(readFileSync(join(luaDir, "includes", `${name}.lua`), "utf8"), seen).trimEnd();
  });
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
 * The include with only the definitions the script uses, directly or through other
 * definitions: Redis runs a script's whole text on every call, so every unused helper
 * (a closure or a table made per call) would cost each call.
 */
function shake(include, body) {
  const { header, chunks } = chunksOf(include);
  const byName = new Map();
  for (const c of chunks) for (const n of c.names) byName.set(n, c);
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
  const kept = chunks.filter((c) => needed.has(c)).map((c) => c.lines.join("\n"));
  return [header, ...kept].join("\n").trimEnd();
}

/** A script with its includes inlined, keeping only the helpers it uses. */
function build(source) {
  const marker = /^--@include "([a-zA-Z0-9_-]+)"$/m;
  const m = marker.exec(source);
  if (!m) return source;
  const include = inline(m[0]);
  const body = source.slice(0, m.index) + source.slice(m.index + m[0].length);
  return source.slice(0, m.index) + shake(include, body) + source.slice(m.index + m[0].length);
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
  if (keyNames.length !== numberOfKeys) {
    throw new Error(`lua/${file}: the header lists ${keyNames.length} KEYS, the name says ${numberOfKeys}`);
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
    const lua = build(source);
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
