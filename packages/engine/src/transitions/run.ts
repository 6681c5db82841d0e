/**
 * Running the Lua transitions: `transitionCall` builds a call from the script's KEYS
 * and ARGV names as its header lists them (carried by the generated module: the one
 * place their order is written), `runScript` runs it as the versioned command (EVALSHA
 * with EVAL fallback, via ioredis defineCommand) or queues it on a pipeline.
 */

import type { ChainableCommander } from "ioredis";
import { luaScripts, type ScriptName } from "../generated/lua.js";
import type { PartitionKeys } from "../keys.js";
import type { RedisLike } from "../redis.js";

export type Commander = RedisLike | ChainableCommander;

export type ArgValue = string | number | Buffer;

export interface ScriptCall {
  script: ScriptName;
  keys: string[];
  args: ArgValue[];
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

interface Plan {
  keys: readonly KeyField[];
  params: readonly string[];
  rest: string | null;
}

function planOf<N extends ScriptName>(script: N): Plan {
  // a KEYS name of a header that is no key of PartitionKeys does not compile here
  const keys: readonly KeyField[] = luaScripts[script].keys;
  const argv: readonly string[] = luaScripts[script].argv;
  const last = argv.at(-1);
  const rest = last?.startsWith("...") ? last.slice(3) : null;
  return { keys, params: rest === null ? argv : argv.slice(0, -1), rest };
}

const plans = new Map<ScriptName, Plan>(
  (Object.keys(luaScripts) as ScriptName[]).map((script) => [script, planOf(script)]),
);

/** A call of `script` on the partition `k`: its KEYS and ARGV in the order of the script header. */
export function transitionCall<N extends ScriptName>(
  script: N,
  k: PartitionKeys,
  args: NoInfer<ScriptArgs<N>>,
): ScriptCall {
  const plan = plans.get(script) as Plan;
  const named = args as Record<string, ArgValue | readonly ArgValue[]>;
  const keys = plan.keys.map((name) => k[name]);
  const values = plan.params.map((name) => named[name] as ArgValue);
  if (plan.rest !== null) values.push(...(named[plan.rest] as readonly ArgValue[]));
  return { script, keys, args: values };
}

/** "" lets the script read Redis TIME; a number fixes the clock (tests). */
export function clock(now?: number): string {
  return now === undefined ? "" : String(now);
}

const defined = new WeakSet<object>();

/** Registers every script on a connection once (pipelines inherit them). */
export function defineScripts(redis: RedisLike): void {
  if (defined.has(redis)) return;
  for (const def of Object.values(luaScripts)) {
    redis.defineCommand(def.command, { numberOfKeys: def.numberOfKeys, lua: def.lua });
  }
  defined.add(redis);
}

type ScriptFn = (...args: ArgValue[]) => Promise<unknown>;

/** Runs a script on a connection (returns its reply) or queues it on a pipeline. */
export function runScript(target: Commander, call: ScriptCall): Promise<unknown> {
  const def = luaScripts[call.script];
  if (call.keys.length !== def.numberOfKeys) {
    throw new Error(`${call.script} takes ${def.numberOfKeys} keys, got ${call.keys.length}`);
  }
  const fn = (target as unknown as Record<string, ScriptFn>)[def.command];
  if (!fn) throw new Error(`script ${call.script} is not defined on this connection`);
  return fn.call(target, ...call.keys, ...call.args);
}
