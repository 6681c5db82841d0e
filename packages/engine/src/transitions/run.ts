/**
 * Running the Lua transitions: `transitionCall` builds a call from the script's KEYS
 * and ARGV names as its header lists them (carried by the generated module: the one
 * place their order is written), `runScript` runs it (EVALSHA; EVAL where the script
 * is not loaded yet) on a connection or queues it on a pipeline.
 */

import type { ChainableCommander } from "ioredis";
import { luaScripts, type ScriptName } from "../generated/lua.js";
import type { PartitionKeys } from "../keys.js";
import { coalesceWrites, type RedisLike } from "../redis.js";
import { type ArgValue, LuaScript } from "./script-command.js";

export type Commander = RedisLike | ChainableCommander;

export type { ArgValue };

export interface ScriptCall {
  script: ScriptName;
  keys: string[];
  args: ArgValue[];
  /** the script as loaded with another library's Lua before it (`prefixedScript`); absent: its own text */
  lua?: LuaScript;
}

type Header<N extends ScriptName> = (typeof luaScripts)[N];
type ParamName<A extends string> = A extends `...${infer Rest}` ? Rest : A;

/**
 * The arguments of a script, by the ARGV names of its header: each one a value, a last
 * `...name` an array (the rest of ARGV). A renamed header argument fails the typecheck.
 */
export type ScriptArgs<N extends ScriptName> = {
  [A in Header<N>["argv"][number] as ParamName<A>]: A extends `...${string}` ? readonly ArgValue[] : ArgValue;
};

/** The fields of PartitionKeys that are Redis keys: what a header's KEYS names must be. */
type KeyField = { [F in keyof PartitionKeys]: PartitionKeys[F] extends string ? F : never }[keyof PartitionKeys];

/** A script's named KEYS (a last `...name`, the rest of KEYS, is given apart: `transitionCall`'s `restKeys`). */
type NamedKey<N extends ScriptName> = Exclude<Header<N>["keys"][number], `...${string}`>;

/** The scripts whose named KEYS are all a partition's (every transition but the tenant-slot ones). */
export type PartitionScript = {
  [N in ScriptName]: NamedKey<N> extends KeyField ? N : never;
}[ScriptName];

interface Plan {
  keys: readonly string[];
  params: readonly string[];
  rest: string | null;
}

function planOf<N extends ScriptName>(script: N): Plan {
  const keys = (luaScripts[script].keys as readonly string[]).filter((k) => !k.startsWith("..."));
  const argv: readonly string[] = luaScripts[script].argv;
  const last = argv.at(-1);
  const rest = last?.startsWith("...") ? last.slice(3) : null;
  return { keys, params: rest === null ? argv : argv.slice(0, -1), rest };
}

/** Does the script take a rest of KEYS after its named ones? */
const takesRestKeys = (script: ScriptName): boolean =>
  (luaScripts[script].keys as readonly string[]).some((k) => k.startsWith("..."));

const plans = new Map<ScriptName, Plan>((Object.keys(luaScripts) as ScriptName[]).map((s) => [s, planOf(s)]));

/**
 * A call of `script` on the partition `k`: its KEYS and ARGV in the order of the script
 * header (a KEYS name of the header that is no key of PartitionKeys does not compile);
 * `restKeys` after them, for a script whose header ends its KEYS with a rest.
 */
export function transitionCall<N extends PartitionScript>(
  script: N,
  k: PartitionKeys,
  args: NoInfer<ScriptArgs<N>>,
  restKeys?: readonly string[],
): ScriptCall {
  const call = keyedCall(script, k as unknown as Record<NamedKey<N>, string>, args);
  if (restKeys) call.keys.push(...restKeys);
  return call;
}

/**
 * A call of `script` on keys named as its header names them (a script of another slot
 * than a partition's: the tenant's quota keys), KEYS and ARGV in the header's order.
 */
export function keyedCall<N extends ScriptName>(
  script: N,
  k: Readonly<Record<NamedKey<N>, string>>,
  args: NoInfer<ScriptArgs<N>>,
): ScriptCall {
  const plan = plans.get(script) as Plan;
  const named = args as Record<string, ArgValue | readonly ArgValue[]>;
  const keyOf = k as Readonly<Record<string, string>>;
  const keys = plan.keys.map((name) => keyOf[name] as string);
  const values = plan.params.map((name) => named[name] as ArgValue);
  if (plan.rest !== null) values.push(...(named[plan.rest] as readonly ArgValue[]));
  return { script, keys, args: values };
}

/** "" lets the script read Redis TIME; a number fixes the clock (tests). */
export function clock(now?: number): string {
  return now === undefined ? "" : String(now);
}

/**
 * Each script as a LuaScript (script-command.ts: EVALSHA, EVAL where the connection does
 * not have it), held here rather than registered on the connections (defineCommand): a
 * pipeline copies every registered command onto itself when it is built.
 */
const scripts = Object.fromEntries(
  Object.entries(luaScripts).map(([name, def]) => [
    name,
    new LuaScript(def.lua, def.numberOfKeys, takesRestKeys(name as ScriptName)),
  ]),
) as Record<ScriptName, LuaScript>;

const UTF8 = { replyEncoding: "utf8" } as const;

/** Sends one call of `script` (named `name` in errors): its keys checked, then KEYS and ARGV, the reply as UTF-8 text. */
function execute(
  script: LuaScript,
  name: string,
  target: Commander,
  keys: readonly string[],
  args: readonly ArgValue[],
): Promise<unknown> {
  const n = script.numberOfKeys;
  if (keys.length < n || (keys.length > n && !script.restKeys))
    throw new Error(`${name} takes ${n} keys, got ${keys.length}`);
  return script.execute(target, keys, args, { ...UTF8 });
}

/**
 * A script that is not one of our transitions (another library's, wrapped: the workers'
 * batched continuation adds), run the same way: EVALSHA by its SHA1, EVAL where the server
 * does not have it; sent at once (one command per step: nothing to gather). Returns the runner
 * of its calls: `keys` then `args`, the reply as UTF-8 text.
 */
export function foreignScript(
  lua: string,
  numberOfKeys: number,
): (target: RedisLike, keys: readonly string[], args: readonly ArgValue[]) => Promise<unknown> {
  const script = new LuaScript(lua, numberOfKeys);
  return (target, keys, args) => execute(script, "the script", target, keys, args);
}

/** by script, then by prefix (the same string each call: its hash is kept, not computed again) */
const prefixed = new Map<ScriptName, Map<string, LuaScript>>();

/**
 * `script` loaded with `prefix` before its text: another library's Lua that the script
 * calls (ingestDispatchEvents: BullMQ's addStandardJob as a function). One LuaScript per
 * prefix, kept.
 */
export function prefixedScript(script: ScriptName, prefix: string): LuaScript {
  let byPrefix = prefixed.get(script);
  if (!byPrefix) {
    byPrefix = new Map();
    prefixed.set(script, byPrefix);
  }
  let lua = byPrefix.get(prefix);
  if (!lua) {
    lua = new LuaScript(`${prefix}\n${luaScripts[script].lua}`, luaScripts[script].numberOfKeys, takesRestKeys(script));
    byPrefix.set(prefix, lua);
  }
  return lua;
}

/** Runs a script on a connection (returns its reply) or queues it on a pipeline. */
export function runScript(target: Commander, call: ScriptCall): Promise<unknown> {
  if ((target as { isPipeline?: boolean }).isPipeline !== true) coalesceWrites(target as RedisLike);
  const { script, keys, args } = call;
  return execute(call.lua ?? scripts[script], script, target, keys, args);
}
