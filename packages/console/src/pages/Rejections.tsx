import { type FormEvent, useState } from "react";
import { get, query, type RecentRejection, type Session } from "../api.js";
import { ErrorNote, TenantSelect, Time, usePoll } from "../components.js";
import { navigate, paths } from "../router.js";

export function Rejections({ session, params }: { session: Session; params: URLSearchParams }) {
  const tenant = params.get("tenant") ?? "";
  const path = `/console/api/rejections${query({ tenant })}`;
  const { data, error } = usePoll(() => get<{ rejections: RecentRejection[] }>(path), 5000, path);
  const [draft, setDraft] = useState(tenant);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    navigate(`${paths.rejections()}${query({ tenant: draft })}`);
  };
  return (
    <section aria-labelledby="rejections-title">
      <h1 id="rejections-title">Rejected signals</h1>
      <p className="muted">
        Events refused at ingest (bad payload, forbidden type, conflict…), newest first. Only the reason, type and
        correlation id are kept — never the payload — for the retention period.
      </p>
      {session.identity.kind === "admin" ? (
        <form className="filters" onSubmit={submit} aria-label="Filter rejections">
          <TenantSelect tenants={session.tenants} value={draft} onChange={setDraft} />
          <div className="row">
            <button type="submit">Apply</button>
          </div>
        </form>
      ) : null}
      <ErrorNote error={error} />
      {data ? (
        data.rejections.length === 0 ? (
          <p>No rejected signals.</p>
        ) : (
          <table className="grid">
            <caption className="sr-only">Recent rejected signals</caption>
            <thead>
              <tr>
                <th scope="col">at</th>
                <th scope="col">tenant</th>
                <th scope="col">producer / event</th>
                <th scope="col">type / correlation id</th>
                <th scope="col">reason</th>
                <th scope="col">detail</th>
              </tr>
            </thead>
            <tbody>
              {data.rejections.map((r, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: refusals have no id of their own
                <tr key={i}>
                  <td>
                    <Time iso={r.at} />
                  </td>
                  <td>{r.tenant}</td>
                  <td className="mono">
                    {r.producer}
                    {r.eventId ? `/${r.eventId}` : ""}
                  </td>
                  <td>
                    {r.eventType} / <span className="mono">{r.correlationId}</span>
                  </td>
                  <td>
                    <strong>{r.reason}</strong>
                  </td>
                  <td className="detail">{r.detail ?? "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : (
        !error && <p aria-live="polite">Loading…</p>
      )}
    </section>
  );
}
