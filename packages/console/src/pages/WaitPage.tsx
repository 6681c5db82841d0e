import { useState } from "react";
import { call, type Explanation, get, type JobInfo, query, type Session, type Wait, type WaitState } from "../api.js";
import { ConfirmAction, ErrorNote, Json, StateBadge, Time, usePoll } from "../components.js";
import { Link, paths } from "../router.js";

const VERDICTS: Record<string, string> = {
  resolved: "Resolved: the wait is settled.",
  timed_out: "Timed out: its deadline passed before a matching event was accepted.",
  cancelled: "Cancelled.",
  backlog:
    "Processing backlog: the wait's partition holds events accepted a while ago and not yet matched. The signal may be in there.",
  correlation_mismatch:
    "Correlation mismatch: events arrived that nearly match (same type, another correlation id — or the reverse). Check the producer's correlation id.",
  rejected_signal: "Rejected signal: an event for this wait was refused at ingest (see the reasons below).",
  no_signal: "No signal: nothing resembling the expected event has arrived.",
};

interface Loaded {
  wait: Wait;
  explain: Explanation;
  job: JobInfo;
}

function Definition({ wait }: { wait: Wait }) {
  const rows: Array<[string, React.ReactNode]> = [
    ["tenant", wait.tenant],
    ["run", wait.runId],
    ["position", wait.position],
    ["event type", wait.eventType],
    [
      "correlation id",
      <span key="c" className="mono">
        {wait.correlationId}
      </span>,
    ],
    ["events since", <Time key="s" iso={wait.since ?? null} />],
    ["created", <Time key="t" iso={wait.createdAt} />],
    ["deadline", wait.deadline ? <Time key="d" iso={wait.deadline} /> : "none (waits until cancelled)"],
    ["external job", wait.externalJobId ?? "—"],
  ];
  return (
    <dl className="props">
      {rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
      {wait.metadata ? (
        <div>
          <dt>metadata</dt>
          <dd>
            <Json value={wait.metadata} label="metadata" />
          </dd>
        </div>
      ) : null}
    </dl>
  );
}

/** A history entry's details as short "key value" pairs (an event as producer/id). */
function describe(rest: Record<string, unknown>): string {
  return Object.entries(rest)
    .map(([k, v]) => {
      if (v && typeof v === "object" && "producer" in v && "id" in v) {
        const e = v as { producer: string; id: string };
        return `${k} ${e.producer}/${e.id}`;
      }
      return `${k} ${typeof v === "string" ? v : JSON.stringify(v)}`;
    })
    .join(" · ");
}

function Timeline({ wait }: { wait: Wait }) {
  return (
    <ol className="timeline" aria-label="Timeline">
      {wait.history.map((h, i) => {
        const { at, what, ...rest } = h;
        return (
          // biome-ignore lint/suspicious/noArrayIndexKey: the history is append-only
          <li key={i}>
            <Time iso={at} /> <strong>{what.replace(/_/g, " ")}</strong>
            {Object.keys(rest).length > 0 ? <span className="muted detail"> {describe(rest)}</span> : null}
          </li>
        );
      })}
    </ol>
  );
}

function Verdict({ explain, tenant }: { explain: Explanation; tenant: string }) {
  const d = explain.details;
  return (
    <section aria-labelledby="verdict-title" className={`verdict verdict-${explain.verdict}`}>
      <h2 id="verdict-title">
        Explain verdict: <span data-testid="verdict">{explain.verdict}</span>
      </h2>
      <p>{VERDICTS[explain.verdict] ?? ""}</p>
      {d.nearMisses && d.nearMisses.length > 0 ? (
        <>
          <h3>Near-miss events (buffered, unmatched)</h3>
          <table className="grid" aria-label="Near-miss events">
            <thead>
              <tr>
                <th scope="col">event</th>
                <th scope="col">type</th>
                <th scope="col">correlation id</th>
                <th scope="col">differs in</th>
                <th scope="col">accepted</th>
              </tr>
            </thead>
            <tbody>
              {d.nearMisses.map((m) => (
                <tr key={`${m.producer}/${m.id}`}>
                  <td>
                    <Link to={paths.event(tenant, m.producer, m.id)} className="mono">
                      {m.producer}/{m.id}
                    </Link>
                  </td>
                  <td>{m.type}</td>
                  <td className="mono">{m.correlationId}</td>
                  <td>{m.differs === "correlationId" ? "correlation id" : "type"}</td>
                  <td>
                    <Time iso={m.acceptedAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      {d.rejections && d.rejections.length > 0 ? (
        <>
          <h3>Refused events of this match key</h3>
          <ul>
            {d.rejections.map((r, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: refusals have no id of their own
              <li key={i}>
                <Time iso={r.at} /> {r.producer}
                {r.eventId ? `/${r.eventId}` : ""}: <strong>{r.reason}</strong> {r.detail ?? ""}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {d.heartbeat ? (
        <p data-testid="heartbeat">
          Heartbeats every {d.heartbeat.intervalMs} ms: {d.heartbeat.count} accepted
          {d.heartbeat.lastAt ? (
            <>
              , the last <Time iso={d.heartbeat.lastAt} />
            </>
          ) : null}
          {d.heartbeat.overdue ? (
            <>
              {" "}
              — <strong>heartbeat overdue</strong>: the deadline passed, the timeout is due
            </>
          ) : null}
          .
        </p>
      ) : null}
      {d.backlog ? (
        <p className="muted">
          Partition {d.backlog.partition}: {Math.max(0, d.backlog.undelivered)} undelivered, {d.backlog.pending} pending
          {d.backlog.oldestUnprocessedAgeMs !== null
            ? `, oldest unprocessed ${d.backlog.oldestUnprocessedAgeMs} ms ago`
            : ", nothing unprocessed"}
          .
        </p>
      ) : null}
    </section>
  );
}

function Resolution({ wait }: { wait: Wait }) {
  const r = wait.resolution;
  if (!r) return <p className="muted">Not resolved yet.</p>;
  return (
    <div>
      <p>
        <strong data-testid="resolution-kind">{r.kind}</strong>
        {r.outcome ? <span data-testid="resolution-outcome"> ({r.outcome})</span> : null} at <Time iso={r.at} />
        {r.deadline ? (
          <>
            {" "}
            (deadline <Time iso={r.deadline} />)
          </>
        ) : null}
      </p>
      {r.event ? (
        <>
          <p>
            Resolving event:{" "}
            <Link
              to={paths.event(wait.tenant, r.event.producer, r.event.id)}
              className="mono"
              data-testid="resolving-event"
            >
              {r.event.producer}/{r.event.id}
            </Link>{" "}
            accepted <Time iso={r.event.acceptedAt} />
          </p>
          <Json value={r.event.payload} label="Payload of the resolving event" />
        </>
      ) : null}
      {(r.kind === "deliver" || r.kind === "token") && r.payload ? (
        <Json value={r.payload} label={r.kind === "token" ? "Payload given with the token" : "Delivered payload"} />
      ) : null}
      {r.outcome === "failure" && r.error ? <Json value={r.error} label="Failure error" /> : null}
    </div>
  );
}

function Actions({ wait, reload }: { wait: Wait; reload: () => void }) {
  const [payload, setPayload] = useState("{}");
  const [result, setResult] = useState<string | null>(null);
  if (wait.state !== "waiting") return null;
  return (
    <section aria-labelledby="actions-title">
      <h2 id="actions-title">Actions</h2>
      <p aria-live="polite" className="muted">
        {result}
      </p>
      <div className="row">
        <ConfirmAction
          label="Cancel wait"
          title="Cancel this wait?"
          confirmLabel="Yes, cancel the wait"
          danger
          onConfirm={async () => {
            await call("DELETE", `/v1/waits/${encodeURIComponent(wait.id)}`);
            setResult("Cancelled.");
            reload();
          }}
        >
          <p>
            Wait <span className="mono">{wait.id}</span> (run {wait.runId} @ {wait.position}) is settled as{" "}
            <strong>cancelled</strong> and its continuation is handed to the host. This cannot be undone.
          </p>
        </ConfirmAction>
        <ConfirmAction
          label="Deliver…"
          title="Deliver to this wait?"
          confirmLabel="Deliver"
          onConfirm={async () => {
            let body: Record<string, unknown>;
            try {
              body = JSON.parse(payload) as Record<string, unknown>;
            } catch {
              throw new Error("the payload is not valid JSON");
            }
            const r = await call<{ delivered: string[]; matched: number }>(
              "POST",
              `/v1/deliver${query({ tenant: wait.tenant })}`,
              { eventType: wait.eventType, correlationId: wait.correlationId, payload: body, all: false },
            );
            setResult(
              r.delivered.length ? `Delivered to ${r.delivered.join(", ")}.` : "Nothing delivered (no waiting match).",
            );
            reload();
          }}
        >
          <p>
            Resolves the waiting waits of tenant {wait.tenant} expecting <strong>{wait.eventType}</strong> /{" "}
            <span className="mono">{wait.correlationId}</span> with this payload (as <code>POST /v1/deliver</code>). If
            more than one wait matches, nothing is resolved and the candidates are named.
          </p>
          <label>
            Payload (JSON object)
            <textarea rows={5} value={payload} onChange={(e) => setPayload(e.target.value)} />
          </label>
        </ConfirmAction>
      </div>
    </section>
  );
}

export function WaitPage({ id, session }: { id: string; session: Session }) {
  const enc = encodeURIComponent(id);
  const { data, error, reload } = usePoll<Loaded>(
    async () => {
      const [w, explain, job] = await Promise.all([
        get<{ wait: Wait }>(`/v1/waits/${enc}`),
        get<Explanation>(`/v1/waits/${enc}/explain`),
        get<JobInfo>(`/console/api/waits/${enc}/job`),
      ]);
      return { wait: w.wait, explain, job };
    },
    1500,
    id,
  );
  return (
    <section aria-labelledby="wait-title">
      <h1 id="wait-title">
        Wait <span className="mono">{id}</span> {data ? <StateBadge state={data.wait.state as WaitState} /> : null}
      </h1>
      <ErrorNote error={error} />
      {!data ? (
        !error && <p aria-live="polite">Loading…</p>
      ) : (
        <>
          <p className="sr-only" aria-live="polite" data-testid="state">
            {data.wait.state}
          </p>
          <div className="columns">
            <div>
              <h2>Definition</h2>
              <Definition wait={data.wait} />
              <Verdict explain={data.explain} tenant={data.wait.tenant} />
              <h2>Resolution</h2>
              <Resolution wait={data.wait} />
              <Actions wait={data.wait} reload={reload} />
            </div>
            <div>
              <h2>Timeline</h2>
              <Timeline wait={data.wait} />
              <h2>Late events</h2>
              {data.wait.lateEvents.length === 0 ? (
                <p className="muted">None.</p>
              ) : (
                <ul>
                  {data.wait.lateEvents.map((e) => (
                    <li key={`${e.producer}/${e.id}`}>
                      <Link to={paths.event(data.wait.tenant, e.producer, e.id)} className="mono">
                        {e.producer}/{e.id}
                      </Link>{" "}
                      accepted <Time iso={e.acceptedAt} />
                    </li>
                  ))}
                </ul>
              )}
              <h2>Continuation</h2>
              <p>
                Queue <span className="mono">{data.job.queue}</span>, job <span className="mono">{data.job.jobId}</span>
                : {data.job.job ? <strong>{data.job.job.state}</strong> : <span className="muted">no job</span>}
                {data.job.job ? ` (attempts ${data.job.job.attemptsMade})` : ""}
              </p>
              {data.job.job?.failedReason ? <p className="error">{data.job.job.failedReason}</p> : null}
              {data.job.board && data.job.job ? (
                <p>
                  <a href={data.job.board}>Open the job in Bull Board</a>
                </p>
              ) : null}
              <h2>Consumption</h2>
              {data.wait.consumption ? (
                <p>
                  Consumed by <strong>{data.wait.consumption.by}</strong> at <Time iso={data.wait.consumption.at} />
                </p>
              ) : (
                <p className="muted">Not consumed yet.</p>
              )}
              {session.identity.kind === "admin" ? (
                <p className="muted">
                  Tenant <Link to={paths.waits(query({ tenant: data.wait.tenant }))}>{data.wait.tenant}</Link>
                </p>
              ) : null}
            </div>
          </div>
        </>
      )}
    </section>
  );
}
