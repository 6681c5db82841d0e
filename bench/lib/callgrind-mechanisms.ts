/**
 * Where a callgrind dump of redis-server spent its instructions, by mechanism rather than by
 * script (bench:redis-instructions --by-mechanism): each function's own instructions
 * (`callgrind_annotate`, self cost) put in one group by its name and source file — the Lua
 * interpreter, closures, tables, strings and garbage collection, cjson and cmsgpack, number
 * formatting, memory allocation, the Lua ↔ Redis conversions, the commands' own work, the
 * AOF propagation of a script's writes, and the client I/O. A stripped redis-server (Debian's)
 * names no function: the groups need a build with symbols (docs/benchmarks.md says how).
 */
import { spawnSync } from "node:child_process";

/** A group's name and what it holds: function names (a RegExp on the name) or source files. */
interface Mechanism {
  name: string;
  fn?: RegExp;
  file?: RegExp;
}

// The first that takes a function names its group.
const MECHANISMS: Mechanism[] = [
  { name: "Lua closures (a `local function` run: made, its upvalues found, freed)", fn: /^luaF_/ },
  {
    name: "Lua garbage collection",
    fn: /^(luaC_|sweeplist|sweepwholelist|singlestep|propagatemark|reallymarkobject|markroot|markmt|markTMcache|traverse|atomic|freeobj|cleartable|remarkupvals|checkSizes|GCTM|luaE_freethread|marktmu|luaC_separateudata)/,
  },
  { name: "Lua strings (every string made is hashed and interned)", fn: /^(luaS_|lua_pushlstring|lua_pushstring)/ },
  {
    name: "Lua tables",
    fn: /^luaH_|^(setnodevector|setarrayvector|resize|rehash|newkey|mainposition|numusehash|numusearray|computesizes|countint|luaO_log2|arrayindex|findindex|unbound_search|lua_createtable|lua_settable|lua_gettable|lua_rawgeti|lua_rawseti|lua_next|lua_setfield|lua_getfield|luaV_settable|luaV_gettable)$/,
  },
  { name: "cjson (encode, decode)", fn: /^(json_|strbuf_|fpconv_|lua_cjson|decode_|encode_)/ },
  { name: "cmsgpack (pack, unpack)", fn: /^(mp_|table_is_an_array|mp_encode|mp_decode)/ },
  {
    name: "number ↔ text (printf, strtod: Lua's tostring, Redis's %.17g, cjson's %.14g)",
    fn: /(printf|hack_digit|__mpn_|strtod|str_to_mpn|round_and_return|_IO_|_itoa|str_format|luaO_str2d|luaO_pushvfstring|luaV_tostring|luaV_tonumber)/,
  },
  {
    name: "memory allocation (libc for Lua, jemalloc for Redis)",
    // (libc's by their exact names: Redis's freeClient and the like free more than memory)
    fn: /^(malloc|free|realloc|calloc|_int_malloc|_int_free|_int_realloc|malloc_consolidate|unlink_chunk.*|tcache.*)$|^(je_|zmalloc|zfree|zrealloc|zcalloc|ztrymalloc|l_alloc|luaM_|extent_|arena_|sz_|rtree_)/,
  },
  {
    name: "Lua ↔ Redis (arguments to commands, replies to Lua tables, the script's reply)",
    file: /script_lua\.c|script\.c|resp_parser\.c|eval\.c|function_lua\.c/,
  },
  {
    name: "AOF: a script's writes propagated",
    file: /aof\.c/,
    fn: /^(propagate|alsoPropagate|redisOpArray|postExecutionUnitOperations)/,
  },
  {
    name: "client I/O (reading, parsing, replies)",
    file: /networking\.c|connection\.c|connhelpers\.h|ae\.c|ae_epoll\.c|anet\.c/,
  },
  { name: "libc strings (memcpy, memset, memcmp, strlen)", fn: /^(__mem|mem|__str|str[a-z]*$|__strlen|__strchr)/ },
  {
    name: "the commands' own work (streams, hashes, sorted sets, lists, keys)",
    file: /t_stream\.c|t_hash\.c|t_zset\.c|t_list\.c|t_set\.c|t_string\.c|listpack\.c|quicklist\.c|ziplist\.c|intset\.c|rax\.c|db\.c|dict\.c|sds\.[ch]|object\.c|siphash\.c|util\.c|expire\.c|server\.c|blocked\.c|notify\.c|multi\.c|sha1|mt19937|crc|monotonic/,
  },
  {
    name: "the Lua interpreter (instructions, calls, the stack)",
    fn: /^(lua|index2adr|f_call|callTM|call_binTM|adjust_varargs|tryfuncTM|growCI|resume|Arith|l_strcmp|equalobj)/,
  },
];

export interface MechanismRow {
  name: string;
  instructions: number;
}

/**
 * The instructions of a dump by mechanism (largest first, "other" last), or null when the
 * redis-server that wrote it has no symbols (then only a handful of functions are named).
 */
export function byMechanism(dump: string): MechanismRow[] | null {
  const r = spawnSync("callgrind_annotate", ["--auto=no", "--threshold=100", dump], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`callgrind_annotate: ${r.stderr}`);
  const totals = new Map<string, number>();
  let named = 0;
  let started = false;
  for (const line of r.stdout.split("\n")) {
    if (!started) {
      started = line.includes("file:function");
      continue;
    }
    const m = /^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*?):([^:\s]+)(?: \[.*\])?$/.exec(line);
    if (!m) continue;
    const ir = Number((m[1] as string).replaceAll(",", ""));
    const file = m[2] as string;
    const fn = (m[3] as string).replace(/'\d+$/, "").replace(/\.(part|constprop|isra)\.\d+.*$/, "");
    // (the frames a dump taken mid-run finds on the stack are listed with everything below them)
    if (/^(main|__libc_start_main.*|\(below main\)|0x[0-9a-f]+)$/.test(fn)) continue;
    named++;
    const group = MECHANISMS.find((g) => (g.fn?.test(fn) ?? false) || (g.file?.test(file) ?? false))?.name ?? "other";
    totals.set(group, (totals.get(group) ?? 0) + ir);
  }
  if (named < 50) return null;
  const rows = [...totals].map(([name, instructions]) => ({ name, instructions }));
  rows.sort((a, b) => (a.name === "other" ? 1 : b.name === "other" ? -1 : b.instructions - a.instructions));
  return rows;
}
