/**
 * Operator commands that talk to a running API over HTTP: `wait get|list|explain|
 * cancel`, `deliver`, `publish` (signed with a producer secret) and `event get`.
 * Human output by default, `--json` for scripts. Exit 1 with the API error code.
 */
import { randomUUID } from "node:crypto";
import { HostClient, ProducerClient, RendezvousApiError } from "@rendezvous/client";
import type { Wait } from "@rendezvous/protocol";
import { type Command, Option } from "commander";

interface ClientFlags {
  url: string;
  token?: string;
  tenant?: string;
  json?: boolean;
}

function withClientOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--url <url>", "API base URL").env("RENDEZVOUS_URL").default("http://127.0.0.1:8080"))
    .addOption(new Option("--token <token>", "host key or admin token").env("RENDEZVOUS_TOKEN"))
    .addOption(new Option("--tenant <tenant>", "with the admin token: the tenant"))
    .option("--json", "print JSON");
}

function hostClient(flags: ClientFlags): HostClient {
  if (!flags.token) throw new Error("a host key or the admin token is needed: --token or RENDEZVOUS_TOKEN");
  return new HostClient({ baseUrl: flags.url, token: flags.token, tenant: flags.tenant, retries: 1 });
}

function parseJson(text: string | undefined, what: string): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new Error(`${what} is not valid JSON`);
  }
}

function describeWait(w: Wait): string {
  const lines = [
    `${w.id}  ${w.state}`,
    `  run        ${w.runId} @ ${w.position}   (tenant ${w.tenant})`,
    `  expects    ${w.eventType} / ${w.correlationId}${w.since ? `  since ${w.since}` : ""}`,
    `  created    ${w.createdAt}   deadline ${w.deadline ?? "none"}`,
  ];
  if (w.externalJobId) lines.push(`  job        ${w.externalJobId}`);
  if (w.resolution) {
    const r = w.resolution;
    const by = r.event
      ? `event ${r.event.producer}/${r.event.id} (accepted ${r.event.acceptedAt})`
      : r.deadline
        ? `deadline ${r.deadline}`
        : r.kind;
    lines.push(`  resolved   ${r.kind} at ${r.at} by ${by}`);
  }
  if (w.consumption) lines.push(`  consumed   by ${w.consumption.by} at ${w.consumption.at}`);
  for (const e of w.lateEvents) lines.push(`  late       ${e.producer}/${e.id} accepted ${e.acceptedAt}`);
  lines.push("  history");
  for (const h of w.history) {
    const { at, what, ...rest } = h;
    lines.push(`    ${at}  ${what}${Object.keys(rest).length ? `  ${JSON.stringify(rest)}` : ""}`);
  }
  return lines.join("\n");
}

async function act(flags: ClientFlags, work: () => Promise<{ json: unknown; text: string }>): Promise<void> {
  try {
    const out = await work();
    process.stdout.write(`${flags.json ? JSON.stringify(out.json, null, 2) : out.text}\n`);
  } catch (err) {
    if (err instanceof RendezvousApiError) {
      if (flags.json) process.stdout.write(`${JSON.stringify({ error: err.body }, null, 2)}\n`);
      process.stderr.write(`rendezvous: ${err.code} (${err.status}): ${err.body.message}\n`);
    } else {
      process.stderr.write(`rendezvous: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    process.exitCode = 1;
  }
}

export function addOperatorCommands(program: Command): void {
  const wait = program.command("wait").description("read and manage waits through the API");
  withClientOptions(wait.command("get <id>").description("show a wait and its timeline")).action(
    (id: string, flags: ClientFlags) =>
      act(flags, async () => {
        const w = await hostClient(flags).getWait(id);
        return { json: { wait: w }, text: describeWait(w) };
      }),
  );
  withClientOptions(wait.command("list").description("list waits (by run, type, correlation id, state)"))
    .option("--run-id <id>")
    .option("--state <state>")
    .option("--event-type <type>")
    .option("--correlation-id <id>")
    .option("--limit <n>", "page size", "50")
    .option("--cursor <cursor>")
    .action(
      (
        flags: ClientFlags & {
          runId?: string;
          state?: Wait["state"];
          eventType?: string;
          correlationId?: string;
          limit: string;
          cursor?: string;
        },
      ) =>
        act(flags, async () => {
          const page = await hostClient(flags).listWaits({
            runId: flags.runId,
            state: flags.state,
            eventType: flags.eventType,
            correlationId: flags.correlationId,
            limit: Number(flags.limit),
            cursor: flags.cursor,
          });
          const rows = page.waits.map(
            (w) =>
              `${w.id.padEnd(22)} ${w.state.padEnd(10)} ${w.runId} @ ${w.position}  ${w.eventType}/${w.correlationId}`,
          );
          if (page.nextCursor) rows.push(`(more: --cursor ${page.nextCursor})`);
          return { json: page, text: rows.join("\n") || "(no waits)" };
        }),
    );
  withClientOptions(wait.command("explain <id>").description("why is this wait still pending?")).action(
    (id: string, flags: ClientFlags) =>
      act(flags, async () => {
        const e = await hostClient(flags).explain(id);
        return { json: e, text: `${e.verdict}  (state ${e.state})\n${JSON.stringify(e.details, null, 2)}` };
      }),
  );
  withClientOptions(wait.command("cancel <id>").description("cancel a waiting wait")).action(
    (id: string, flags: ClientFlags) =>
      act(flags, async () => {
        const w = await hostClient(flags).cancel(id);
        return { json: { wait: w }, text: describeWait(w) };
      }),
  );

  withClientOptions(program.command("deliver <eventType>").description("resolve waiting waits of a type directly"))
    .option("--correlation-id <id>")
    .option("--payload <json>")
    .option("--all", "resolve every match (fan-out) instead of refusing ambiguity")
    .action((eventType: string, flags: ClientFlags & { correlationId?: string; payload?: string; all?: boolean }) =>
      act(flags, async () => {
        const r = await hostClient(flags).deliver({
          eventType,
          correlationId: flags.correlationId,
          payload: parseJson(flags.payload, "--payload"),
          all: flags.all ?? false,
        });
        return { json: r, text: `matched ${r.matched}, delivered ${r.delivered.length}: ${r.delivered.join(" ")}` };
      }),
    );

  const event = program.command("event").description("read events");
  withClientOptions(event.command("get <producer> <eventId>").description("show an accepted event")).action(
    (producer: string, eventId: string, flags: ClientFlags) =>
      act(flags, async () => {
        const e = await hostClient(flags).getEvent(producer, eventId);
        return {
          json: { event: e },
          text: `${e.producer}/${e.id}  ${e.status}\n  ${e.type} / ${e.correlationId}  accepted ${e.acceptedAt} (${e.streamId})\n  matched ${e.matchedWaits.join(" ") || "-"}  late for ${e.lateFor.join(" ") || "-"}`,
        };
      }),
  );

  program
    .command("publish <eventType> <correlationId>")
    .description("publish an event as a producer (signed with its secret, or with its key)")
    .addOption(new Option("--url <url>", "API base URL").env("RENDEZVOUS_URL").default("http://127.0.0.1:8080"))
    .requiredOption("--producer <tenant/producer>", "who publishes")
    .addOption(new Option("--secret <secret>", "HMAC secret").env("RENDEZVOUS_PRODUCER_SECRET"))
    .addOption(new Option("--key <key>", "bearer key").env("RENDEZVOUS_PRODUCER_KEY"))
    .option("--id <eventId>", "event id (default: a new UUID)")
    .option("--payload <json>")
    .option("--json", "print JSON")
    .action(
      (
        eventType: string,
        correlationId: string,
        flags: ClientFlags & { producer: string; secret?: string; key?: string; id?: string; payload?: string },
      ) =>
        act(flags, async () => {
          const [tenant, producer] = flags.producer.split("/");
          if (!tenant || !producer) throw new Error("--producer takes tenant/producer");
          const credential = flags.secret ? { secret: flags.secret } : flags.key ? { key: flags.key } : undefined;
          if (!credential) throw new Error("a producer secret (--secret) or key (--key) is needed");
          const client = new ProducerClient({ baseUrl: flags.url, tenant, producer, ...credential });
          const r = await client.publish({
            id: flags.id ?? randomUUID(),
            type: eventType,
            correlationId,
            payload: parseJson(flags.payload, "--payload"),
          });
          return { json: r, text: `${r.status}  ${r.event.producer}/${r.event.id}  stream ${r.event.streamId}` };
        }),
    );
}
