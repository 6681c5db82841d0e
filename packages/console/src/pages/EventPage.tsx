import { type EventRecord, get, query, type Session } from "../api.js";
import { ErrorNote, StateBadge, Time, usePoll, WaitLinks } from "../components.js";

export function EventPage({
  tenant,
  producer,
  id,
  session,
}: {
  tenant: string;
  producer: string;
  id: string;
  session: Session;
}) {
  const path = `/v1/events/${encodeURIComponent(producer)}/${encodeURIComponent(id)}${query({
    tenant: session.identity.kind === "admin" ? tenant : undefined,
  })}`;
  const { data, error } = usePoll(() => get<{ event: EventRecord }>(path), 2000, path);
  const e = data?.event;
  return (
    <section aria-labelledby="event-title">
      <h1 id="event-title">
        Event{" "}
        <span className="mono">
          {producer}/{id}
        </span>{" "}
        {e ? <StateBadge state={e.status} /> : null}
      </h1>
      <ErrorNote error={error} />
      {!e ? (
        !error && <p aria-live="polite">Loading…</p>
      ) : (
        <>
          <dl className="props">
            <div>
              <dt>tenant</dt>
              <dd>{tenant}</dd>
            </div>
            <div>
              <dt>status</dt>
              <dd data-testid="event-status">{e.status}</dd>
            </div>
            <div>
              <dt>type</dt>
              <dd>{e.type}</dd>
            </div>
            <div>
              <dt>correlation id</dt>
              <dd className="mono">{e.correlationId}</dd>
            </div>
            <div>
              <dt>accepted</dt>
              <dd>
                <Time iso={e.acceptedAt} /> (stream id <span className="mono">{e.streamId}</span>)
              </dd>
            </div>
          </dl>
          <h2>Matched waits</h2>
          <WaitLinks ids={e.matchedWaits} />
          <h2>Late for</h2>
          <WaitLinks ids={e.lateFor} />
        </>
      )}
    </section>
  );
}
