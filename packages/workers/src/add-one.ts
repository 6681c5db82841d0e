/**
 * BullMQ's addStandardJob as the Lua function `addOne(KEYS, ARGV)` that the step scripts run
 * once per job (job-adds.ts, ingestDispatchEvents). The script's text defines its helpers
 * (some 25 `local function`s) before its main part; as the body of a function run per job,
 * every job would make each of them anew: a closure each, with its upvalues looked up, its
 * allocation and its collection, some 20k Redis instructions a job (`npm run
 * bench:redis-instructions -- --only accept-jobs`). Where it cannot change what the script
 * does, a helper is made once per script call instead: its text, unchanged, before addOne in
 * a block of its own, where addOne's body finds it as it found it in its own body.
 *
 * A helper moves when it is a top-level `local function` whose free names are only `rcall`
 * (the script's own `local rcall = redis.call`, which the block repeats), helpers that moved
 * before it, itself, and names the script does not declare at its top level before it
 * (globals: redis, cjson, string…); when no statement before it names it and none assigns to
 * it; and when its name is declared once. Everything else stays where it was, and a text
 * that luaparse cannot parse moves nothing: addOne is then the text as it is.
 */
import luaparse from "luaparse";

type Node = luaparse.Node;
type Statement = luaparse.Statement;

/** The nodes directly under `node` (luaparse's fields that hold nodes or lists of them). */
function* children(node: Node): Generator<Node> {
  for (const value of Object.values(node)) {
    for (const child of Array.isArray(value) ? value : [value]) {
      if (child && typeof child === "object" && typeof child.type === "string") yield child as Node;
    }
  }
}

/** The name of a `local function name` statement, else undefined. */
const localFunctionName = (st: Statement) =>
  st.type === "FunctionDeclaration" && st.isLocal && st.identifier?.type === "Identifier"
    ? st.identifier.name
    : undefined;

/** The names a statement declares in its block (`local a, b = …`, `local function f`). */
function declaredNames(st: Statement): string[] {
  if (st.type === "LocalStatement") return st.variables.map((v) => v.name);
  const name = localFunctionName(st);
  return name === undefined ? [] : [name];
}

/** The names a node uses that no scope inside it declares (`declared`: the scopes around it). */
function freeNames(node: Node | null | undefined, declared: Set<string>[], out: Set<string>): void {
  if (!node) return;
  const bound = (name: string) => declared.some((s) => s.has(name));
  const block = (body: Statement[], scope: Set<string>) => {
    const inner = [...declared, scope];
    for (const st of body) freeNamesIn(st, inner, out);
  };
  switch (node.type) {
    case "Identifier":
      if (!bound(node.name)) out.add(node.name);
      return;
    case "FunctionDeclaration": {
      const scope = new Set<string>();
      if (node.identifier?.type === "Identifier" && node.isLocal) scope.add(node.identifier.name);
      else if (node.identifier) freeNames(node.identifier, declared, out);
      // (`function t:m()` has the parameter `self`)
      if (node.identifier?.type === "MemberExpression" && node.identifier.indexer === ":") scope.add("self");
      for (const p of node.parameters) if (p.type === "Identifier") scope.add(p.name);
      block(node.body, scope);
      return;
    }
    case "MemberExpression":
      freeNames(node.base, declared, out);
      return;
    case "TableKeyString":
      freeNames(node.value, declared, out);
      return;
    case "LocalStatement":
      // (the values are evaluated before the names exist; the caller's block adds the names)
      for (const e of node.init) freeNames(e, declared, out);
      return;
    case "ForNumericStatement":
      for (const e of [node.start, node.end, node.step]) freeNames(e, declared, out);
      block(node.body, new Set([node.variable.name]));
      return;
    case "ForGenericStatement":
      for (const e of node.iterators) freeNames(e, declared, out);
      block(node.body, new Set(node.variables.map((v) => v.name)));
      return;
    case "RepeatStatement": {
      // (the condition sees the body's locals)
      const scope = new Set<string>();
      block(node.body, scope);
      freeNames(node.condition, [...declared, scope], out);
      return;
    }
    case "DoStatement":
    case "WhileStatement":
    case "IfClause":
    case "ElseifClause":
    case "ElseClause":
      if ("condition" in node) freeNames(node.condition, declared, out);
      block(node.body, new Set());
      return;
    default:
      for (const child of children(node)) freeNames(child, declared, out);
  }
}

/** freeNames of a statement of a block whose scope is the last of `declared`; adds what it declares there. */
function freeNamesIn(st: Statement, declared: Set<string>[], out: Set<string>): void {
  freeNames(st, declared, out);
  const scope = declared[declared.length - 1] as Set<string>;
  for (const name of declaredNames(st)) scope.add(name);
}

/** The names an assignment statement anywhere in `node` assigns to (as plain names). */
function assignedNames(node: Node, out: Set<string>): void {
  if (node.type === "AssignmentStatement") {
    for (const v of node.variables) if (v.type === "Identifier") out.add(v.name);
  }
  // (`function name() … end` assigns to the name too)
  if (node.type === "FunctionDeclaration" && !node.isLocal && node.identifier?.type === "Identifier") {
    out.add(node.identifier.name);
  }
  for (const child of children(node)) assignedNames(child, out);
}

/** A node's [start, end) in the text (luaparse's `ranges` option; its types leave it out). */
const rangeOf = (node: Node) => (node as { range?: [number, number] }).range;

/** `local rcall = redis.call`, as the statement is. */
const isRcall = (st: Statement) =>
  st.type === "LocalStatement" &&
  st.variables.length === 1 &&
  st.variables[0]?.name === "rcall" &&
  st.init.length === 1 &&
  st.init[0]?.type === "MemberExpression" &&
  st.init[0].base.type === "Identifier" &&
  st.init[0].base.name === "redis" &&
  st.init[0].identifier.name === "call";

/** The helpers of `text` (a script's body, run with KEYS and ARGV) that can be made once: their ranges, in order. */
export function movableHelpers(text: string): Array<[number, number]> {
  let chunk: luaparse.Chunk;
  try {
    chunk = luaparse.parse(text, { ranges: true, luaVersion: "5.1", comments: false, scope: false });
  } catch {
    return [];
  }
  const assigned = new Set<string>();
  assignedNames(chunk, assigned);
  const declaredCount = new Map<string, number>();
  for (const st of chunk.body) {
    for (const n of declaredNames(st)) declaredCount.set(n, (declaredCount.get(n) ?? 0) + 1);
  }

  // the top level as addOne's body: its parameters, then each statement's declarations
  const top = new Set(["KEYS", "ARGV"]);
  const usedBefore = new Set<string>();
  const moved = new Set<string>();
  const ranges: Array<[number, number]> = [];
  let rcall = false;
  for (const st of chunk.body) {
    const name = localFunctionName(st);
    if (name !== undefined) {
      const free = new Set<string>();
      freeNames(st, [], free);
      // (rcall: the block's own, so only where the text's is in scope; a helper moved
      // before it; or a name the text has not declared yet: a global)
      const allowed = (n: string) => (n === "rcall" ? rcall : moved.has(n) || !top.has(n));
      if (
        [...free].every(allowed) &&
        !usedBefore.has(name) &&
        !assigned.has(name) &&
        declaredCount.get(name) === 1 &&
        rangeOf(st)
      ) {
        moved.add(name);
        ranges.push(rangeOf(st) as [number, number]);
      } else {
        // (it stays in addOne: a name it uses as a global must stay one)
        for (const n of free) usedBefore.add(n);
      }
    } else {
      freeNames(st, [top], usedBefore);
    }
    if (isRcall(st) && !assigned.has("rcall") && declaredCount.get("rcall") === 1) rcall = true;
    for (const n of declaredNames(st)) top.add(n);
  }
  return ranges;
}

/**
 * `body` (BullMQ's script text) as the Lua function `addOne(KEYS, ARGV)`, its movable helpers
 * made once before it (movableHelpers).
 */
export function addOneLua(body: string): string {
  const ranges = movableHelpers(body);
  if (ranges.length === 0) return `local function addOne(KEYS, ARGV)\n${body}\nend`;
  const helpers: string[] = [];
  let rest = "";
  let from = 0;
  for (const [start, end] of ranges) {
    helpers.push(body.slice(start, end));
    rest += body.slice(from, start);
    from = end;
  }
  rest += body.slice(from);
  return `local addOne\ndo\nlocal rcall = redis.call\n${helpers.join("\n")}\naddOne = function(KEYS, ARGV)\n${rest}\nend\nend`;
}
