/**
 * The replies of the Lua transitions: a list whose first element is an outcome code
 * (`Code`, generated from the `C_*` constants of the Lua includes), and the one mapping
 * from the codes that are API errors to typed errors.
 */

import { RendezvousError } from "@rendezvous/protocol";
import { Code } from "../generated/lua.js";

export { Code };
export type CodeName = keyof typeof Code;
export type CodeValue = (typeof Code)[CodeName];

export type Reply = [number, ...unknown[]];

/** Maps a reply code that is an API error to the typed error (the one mapping). */
export function failure(code: number, context: Record<string, unknown> = {}): RendezvousError {
  switch (code) {
    case Code.NOT_FOUND:
      return new RendezvousError("not_found");
    case Code.NOT_WAITING:
      return new RendezvousError("not_waiting", undefined, context);
    case Code.NOT_RESOLVED:
      return new RendezvousError("not_resolved", undefined, context);
    case Code.LATE:
      return new RendezvousError("deadline_passed", undefined, context);
    case Code.NO_HEARTBEAT:
      return new RendezvousError("heartbeat_disabled", undefined, context);
    default:
      return new RendezvousError("internal", `unexpected reply code ${code}`, context);
  }
}

/** A script's reply as a coded list. @throws RendezvousError internal when it is not one */
export function asReply(value: unknown, script: string): Reply {
  if (!Array.isArray(value) || typeof value[0] !== "number") {
    throw new RendezvousError("internal", `${script}: malformed reply`);
  }
  return value as Reply;
}
