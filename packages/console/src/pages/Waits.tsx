import { type FormEvent, useState } from "react";
import { get, query, type Session, type WaitRow } from "../api.js";
import { ErrorNote, StateBadge, TenantSelect, Time, usePoll } from "../components.js";
import { Link, navigate, paths } from "../router.js";

const STATES = ["waiting", "resolved", "timed_out", "cancelled"] as const;
const FIELDS = ["tenant", "state", "eventType", "correlationId", "runId"] as const;

export function Waits({ session, params }: { session: Session; params: URLSearchParams }) {
  const filter = Object.fromEntries(FIELDS.map((f) => [f, params.get(f) ?? ""])) as Record<
    (typeof FIELDS)[number],
    string
  >;
  const cursor = params.get("cursor") ?? "";
  const limit = Number(params.get("limit") ?? 50) || 50;
  const key = params.toString();
  const { data, error } = usePoll(
    () =>
      get<{ waits: WaitRow[]; nextCursor: string | null }>(`/console/api/waits${query({ ...filter, cursor, limit })}`),
    0,
    key,
  );
  const [draft, setDraft] = useState(filter);
  const [draftKey, setDraftKey] = useState(key);
  if (draftKey !== key) {
    setDraft(filter);
    setDraftKey(key);
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    navigate(paths.waits(query(draft)));
  };
  const field = (name: (typeof FIELDS)[number], label: string, placeholder?: string) => (
    <label>
      {label}
      <input
        name={name}
        value={draft[name]}
        placeholder={placeholder}
        onChange={(e) => setDraft({ ...draft, [name]: e.target.value })}
      />
    </label>
  );
  return (
    <section aria-labelledby="waits-title">
      <h1 id="waits-title">Waits</h1>
      <form className="filters" onSubmit={submit} aria-label="Filter waits">
        {session.identity.kind === "admin" ? (
          <TenantSelect
            name="tenant"
            tenants={session.tenants}
            value={draft.tenant}
            onChange={(tenant) => setDraft({ ...draft, tenant })}
          />
        ) : null}
        <label>
          State
          <select name="state" value={draft.state} onChange={(e) => setDraft({ ...draft, state: e.target.value })}>
            <option value="">any state</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s.replace("_", " ")}
              </option>
            ))}
          </select>
        </label>
        {field("eventType", "Event type", "order.paid")}
        {field("correlationId", "Correlation id")}
        {field("runId", "Run id")}
        <div className="row">
          <button type="submit">Apply filters</button>
          <button type="button" className="secondary" onClick={() => navigate(paths.waits())}>
            Clear
          </button>
        </div>
      </form>
      <ErrorNote error={error} />
      {!data && !error ? <p aria-live="polite">Loading…</p> : null}
      {data && (
        <>
          <p className="muted" aria-live="polite">
            {data.waits.length} wait{data.waits.length === 1 ? "" : "s"} on this page
            {cursor ? " (not the first page)" : ""}.
          </p>
          {data.nextCursor && data.waits.length < limit ? (
            <p className="muted">
              This page ended early: each page examines a bounded part of the indexes. Next page continues the search.
            </p>
          ) : null}
          <table className="grid">
            <caption className="sr-only">Waits matching the filters</caption>
            <thead>
              <tr>
                <th scope="col">wait</th>
                <th scope="col">state</th>
                <th scope="col">tenant</th>
                <th scope="col">run @ position</th>
                <th scope="col">event type / correlation id</th>
                <th scope="col">created</th>
                <th scope="col">deadline</th>
              </tr>
            </thead>
            <tbody>
              {data.waits.map((w) => (
                <tr key={w.id}>
                  <td>
                    <Link to={paths.wait(w.id)} className="mono">
                      {w.id}
                    </Link>
                  </td>
                  <td>
                    <StateBadge state={w.state} />
                    {w.resolvedBy && w.state === "resolved" ? <span className="muted"> by {w.resolvedBy}</span> : null}
                  </td>
                  <td>{w.tenant}</td>
                  <td>
                    {w.runId} @ {w.position}
                  </td>
                  <td>
                    {w.eventType} / <span className="mono">{w.correlationId}</span>
                  </td>
                  <td>
                    <Time iso={w.createdAt} />
                  </td>
                  <td>
                    <Time iso={w.deadline} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <nav className="row" aria-label="Pages">
            {cursor ? <Link to={paths.waits(query({ ...filter, limit: params.get("limit") }))}>First page</Link> : null}
            {data.nextCursor ? (
              <Link
                to={paths.waits(query({ ...filter, limit: params.get("limit"), cursor: data.nextCursor }))}
                rel="next"
              >
                Next page
              </Link>
            ) : (
              <span className="muted">No more waits.</span>
            )}
          </nav>
        </>
      )}
    </section>
  );
}
