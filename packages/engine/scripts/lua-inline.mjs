// Build-time inlining of the one-line helpers marked `--@inline` in lua/includes, for
// scripts/build-lua.mjs. Redis runs a script's whole text on every call and Lua 5.1 makes
// a new closure for every `local function` each time (about 1,000 Redis instructions
// with allocation and GC), and each call costs a frame. A marked helper keeps its one
// home in its include; the build writes its body at each call site of the script and
// leaves its definition out. A marked helper is exactly
//
//   --@inline
//   local function name(a, b)
//     return <expression on one line>     called as an expression: "(<expression>)"
//   end
//
// or with one call statement on one line as its body instead of the `return` (called as
// a statement: that statement). The build refuses what it cannot inline exactly: a
// helper of another form, one used other than by a call, an expression helper called as
// a statement or the reverse, an argument other than a name, field or literal unless
// its parameter is used exactly once, in a body without and/or, such parameters in
// their order, and the argument makes no Redis call (so no evaluation is repeated,
// dropped or reordered against another), and a free name of the body declared anywhere
// else in the script (it could be shadowed at a call site).

const NAME = /[A-Za-z_]\w*/y;
const KEY = /\s*=(?!=)/y;
const KEYWORDS = new Set(
  "and break do else elseif end false for function if in local nil not or repeat return then true until while".split(
    " ",
  ),
);
// names and fields, written as they are; literals too where repeated, but in parentheses
const BARE = /^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\["[^"\\]*"\])*$/;
const SIMPLE = /^(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\["[^"\\]*"\])*|"[^"\\]*"|-?\d+)$/;

/** Per character of a Lua text: is it code (not inside a comment or a string)? */
function codeMask(text) {
  const code = new Uint8Array(text.length);
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "-" && text[i + 1] === "-") {
      const end = text.startsWith("[[", i + 2) ? text.indexOf("]]", i + 4) + 2 : text.indexOf("\n", i);
      i = end <= 1 || end === -1 ? text.length : end;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === "\\" ? 2 : 1;
      i = j + 1;
    } else if (c === "[" && text[i + 1] === "[") {
      const end = text.indexOf("]]", i + 2);
      i = end === -1 ? text.length : end + 2;
    } else {
      code[i] = 1;
      i++;
    }
  }
  return code;
}

/** The identifier occurrences of code `text`: {name, at, field (after . or :), key (a table key `name =`)}. */
function names(text) {
  const code = codeMask(text);
  const out = [];
  for (let i = 0; i < text.length; i++) {
    if (!code[i] || !/[A-Za-z_]/.test(text[i]) || (i > 0 && /[\w]/.test(text[i - 1]))) continue;
    NAME.lastIndex = i;
    const name = NAME.exec(text)[0];
    let b = i - 1;
    while (b >= 0 && /\s/.test(text[b])) b--;
    KEY.lastIndex = i + name.length;
    out.push({ name, at: i, field: text[b] === ":" || (text[b] === "." && text[b - 1] !== "."), key: KEY.test(text) });
    i += name.length - 1;
  }
  return out;
}

/** The index of the `)` closing the `(` at `open`, and the top-level arguments between. */
function callArgs(text, code, open) {
  const args = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open; i < text.length; i++) {
    if (!code[i]) continue;
    const c = text[i];
    if (c === "(" || c === "{" || c === "[") depth++;
    else if (c === ")" || c === "}" || c === "]") {
      depth--;
      if (depth === 0) {
        const last = text.slice(start, i).trim();
        if (last !== "" || args.length > 0) args.push(last);
        return { close: i, args };
      }
    } else if (c === "," && depth === 1) {
      args.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  throw new Error("unbalanced call");
}

/** The names a script text declares (locals, function parameters, loop variables), each occurrence. */
function declarations(text) {
  const code = text.replace(/--\[\[[\s\S]*?\]\]/g, "").replace(/--.*$/gm, "");
  const out = [];
  const list = (s) => s.split(",").map((n) => n.trim());
  for (const m of code.matchAll(/\blocal\s+function\s+([A-Za-z_]\w*)/g)) out.push(m[1]);
  for (const m of code.matchAll(/\blocal\s+(?!function\b)((?:[A-Za-z_]\w*\s*,\s*)*[A-Za-z_]\w*)/g))
    out.push(...list(m[1]));
  for (const m of code.matchAll(/\bfunction\b[^(]*\(([^)]*)\)/g)) out.push(...list(m[1]).filter((n) => n !== ""));
  for (const m of code.matchAll(/\bfor\s+((?:[A-Za-z_]\w*\s*,\s*)*[A-Za-z_]\w*)\s+(?:=|in)\b/g))
    out.push(...list(m[1]));
  return out;
}

const DEFINITION =
  /(?:^--(?!@inline).*\n)*^--@inline\nlocal function ([A-Za-z_]\w*)\(([^)]*)\)\n {2}(return )?(.+)\nend\n/gm;

/** The script text with its `--@inline` helpers written at their call sites (see above). */
export function inlineHelpers(file, lua) {
  const helpers = new Map();
  let text = lua.replace(DEFINITION, (_, name, params, ret, body) => {
    const ps = params
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== "");
    helpers.set(name, { params: ps, expression: ret !== undefined, body });
    return "";
  });
  if (/^--@inline$/m.test(text)) throw new Error(`lua/${file}: an --@inline helper is not of the inlinable form`);
  if (helpers.size === 0) return lua;
  const declared = declarations(text);
  for (const [name, h] of helpers) {
    if (!h.expression && !/^[A-Za-z_][\w.]*\(.*\)$/.test(h.body))
      throw new Error(`lua/${file}: --@inline ${name}: its body is neither a return nor one call`);
    for (const n of names(h.body)) {
      if (n.field || n.key || KEYWORDS.has(n.name) || h.params.includes(n.name)) continue;
      const count = declared.filter((d) => d === n.name).length;
      if (
        count > 0 &&
        !(count === 1 && new RegExp(`^local (?:function )?${n.name}\\b`, "m").test(text)) &&
        !helpers.has(n.name)
      )
        throw new Error(`lua/${file}: --@inline ${name}: ${n.name} is declared elsewhere in the script`);
    }
  }
  // the body of helper h at a call with `args`
  const expand = (name, h, args) => {
    if (args.length !== h.params.length) throw new Error(`lua/${file}: ${name} called with ${args.length} arguments`);
    const uses = names(h.body).filter((n) => !n.field && !n.key);
    const shortCircuit = uses.some((n) => n.name === "and" || n.name === "or");
    let lastAt = -1;
    args.forEach((a, i) => {
      if (SIMPLE.test(a)) return;
      const used = uses.filter((n) => n.name === h.params[i]);
      if (used.length !== 1 || shortCircuit || used[0].at < lastAt || /\bredis\.call\b/.test(a))
        throw new Error(`lua/${file}: ${name}(${args.join(", ")}): cannot inline the argument ${a}`);
      lastAt = used[0].at;
    });
    let out = h.body;
    for (const n of uses.reverse()) {
      const i = h.params.indexOf(n.name);
      if (i === -1) continue;
      const a = args[i];
      out = out.slice(0, n.at) + (BARE.test(a) ? a : `(${a})`) + out.slice(n.at + n.name.length);
    }
    return h.expression ? `(${out})` : out;
  };
  for (let round = 0; ; round++) {
    if (round > 10_000) throw new Error(`lua/${file}: --@inline helpers call each other without end`);
    const code = codeMask(text);
    const site = names(text).find((n) => !n.field && helpers.has(n.name));
    if (!site) break;
    const h = helpers.get(site.name);
    const open = site.at + site.name.length;
    if (text[open] !== "(" || !code[open])
      throw new Error(`lua/${file}: --@inline ${site.name} is used other than by a call`);
    const { close, args } = callArgs(text, code, open);
    const lineStart = text.lastIndexOf("\n", site.at) + 1;
    const lineEnd = text.indexOf("\n", close);
    const statement =
      text.slice(lineStart, site.at).trim() === "" &&
      /^\s*(--.*)?$/.test(text.slice(close + 1, lineEnd === -1 ? undefined : lineEnd));
    if (statement === h.expression)
      throw new Error(
        `lua/${file}: --@inline ${site.name} is ${h.expression ? "an expression" : "a statement"}, called as ${statement ? "a statement" : "an expression"}`,
      );
    text = text.slice(0, site.at) + expand(site.name, h, args) + text.slice(close + 1);
  }
  return text;
}
