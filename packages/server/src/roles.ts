/**
 * The worker roles of one process: any of matcher, scheduler, dispatcher (and the
 * API, mounted by the HTTP app). Stopping drains: stop reading, finish in-flight
 * work, hand back what is not done (it stays pending for another process).
 */
import { FAILPOINTS, failpointArmed, Pacer, type Resources } from "@rendezvous/engine";
import { Dispatcher, Matcher, Scheduler } from "@rendezvous/workers";

export const WORKER_ROLES = ["matcher", "scheduler", "dispatcher"] as const;
export type WorkerRole = (typeof WORKER_ROLES)[number];

export interface RunningRoles {
  readonly names: WorkerRole[];
  readonly matcher?: Matcher;
  readonly scheduler?: Scheduler;
  readonly dispatcher?: Dispatcher;
  /** every started role is still running */
  running(): boolean;
  stop(): Promise<void>;
}

export async function startRoles(res: Resources, names: readonly WorkerRole[]): Promise<RunningRoles> {
  // scheduler and dispatcher in one process (`start`, beside the API): one pacer for the
  // timeouts and their hand-out, so a burst's steps of the two take turns with a rest
  // after each instead of running back to back and starving the API's requests
  const pacer = names.includes("scheduler") && names.includes("dispatcher") ? new Pacer() : undefined;
  const scheduler = names.includes("scheduler") ? new Scheduler(res, { pacer }) : undefined;
  const dispatcher = names.includes("dispatcher") ? new Dispatcher(res, { pacer }) : undefined;
  // matcher and dispatcher in one process: the match hands its outbox entries straight to
  // the dispatcher (docs/architecture.md, "The chain in one process"); not with a failpoint
  // armed, whose point between the two steps stays where docs/api.md puts it
  const handoff = dispatcher && !FAILPOINTS.some(failpointArmed) ? dispatcher : undefined;
  const matcher = names.includes("matcher") ? new Matcher(res, { dispatcher: handoff }) : undefined;
  // and the API's append matches what it appends in the same script when the matchers have
  // caught up (docs/architecture.md, "Accept and match in one step"); not while tracing,
  // whose match span is the matcher's
  if (matcher && handoff && !res.tracing.enabled) res.store.acceptWith(matcher.acceptor(handoff));
  let stopped = false;
  await scheduler?.start();
  await dispatcher?.start();
  await matcher?.start();
  return {
    names: [...names],
    matcher,
    scheduler,
    dispatcher,
    running: () => !stopped && (matcher?.loop.running ?? true) && (dispatcher?.loop.running ?? true),
    async stop() {
      if (stopped) return;
      stopped = true;
      res.store.acceptWith(undefined);
      // matcher first: what it resolves still reaches the outbox and the dispatcher
      await matcher?.stop();
      await Promise.all([scheduler?.stop(), dispatcher?.stop()]);
    },
  };
}
