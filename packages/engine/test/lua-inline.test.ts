import { describe, expect, it } from "vitest";

type Inline = (file: string, lua: string) => string;
const { inlineHelpers } = (await import(new URL("../scripts/lua-inline.mjs", import.meta.url).href)) as {
  inlineHelpers: Inline;
};

const twice = '--@inline\nlocal function twice(a)\n  return a .. ":" .. a\nend\n\n';
const put = '-- writes one key\n--@inline\nlocal function put(k, v)\n  redis.call("SET", k, v)\nend\n\n';

describe("the Lua build's --@inline helpers", () => {
  it("writes an expression helper in parentheses and a statement helper as its statement", () => {
    const out = inlineHelpers("t.lua", `${twice}${put}local x = twice(y)\nput(keys.a, "p" .. twice(x))\nreturn x\n`);
    expect(out).not.toMatch(/function|--@inline|writes one key/);
    expect(out).toContain('local x = (y .. ":" .. y)');
    expect(out).toContain('redis.call("SET", keys.a, ("p" .. (x .. ":" .. x)))');
  });

  it("leaves field names, table keys and strings alone", () => {
    const helper = '--@inline\nlocal function ref(ev)\n  return { ev = ev["ev"], s = "ev" }\nend\n\n';
    expect(inlineHelpers("t.lua", `${helper}local r = ref(e.x)\n`)).toContain(
      'local r = ({ ev = e.x["ev"], s = "ev" })',
    );
  });

  it("refuses what it cannot inline exactly", () => {
    const refused =
      (body: string, extra = "") =>
      () =>
        inlineHelpers("t.lua", `${extra}${twice}${put}${body}`);
    // an argument evaluated twice, a Redis call moved, the wrong kind of call site
    expect(refused("local x = twice(f(y))\n")).toThrow(/cannot inline the argument/);
    expect(refused('put(k, redis.call("GET", "a"))\n')).toThrow(/cannot inline the argument/);
    expect(refused("twice(y)\n")).toThrow(/called as a statement/);
    expect(refused("local z = put(k, v)\n")).toThrow(/called as an expression/);
    expect(refused("local f = twice\n")).toThrow(/other than by a call/);
    // a free name of the body that a call site could shadow
    const viaG = "--@inline\nlocal function viaG(a)\n  return g(a)\nend\n\n";
    expect(refused("local function h()\n  local g = 2\n  return viaG(1)\nend\n", viaG)).toThrow(/declared elsewhere/);
    // a marked helper of another form
    expect(refused("", "--@inline\nlocal function two(a)\n  local b = a\n  return b\nend\n")).toThrow(/inlinable form/);
  });
});
