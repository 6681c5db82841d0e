import { get, type Session } from "../api.js";
import { ErrorNote, Time, usePoll } from "../components.js";

/** A key or secret as the admin API lists it: its id and dates, never its value. */
interface KeyInfo {
  id: string;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
}

interface ProducerInfo {
  id: string;
  eventTypes: string[];
  rateLimitPerSec: number | null;
  disabled: boolean;
  keys: KeyInfo[];
  secrets: KeyInfo[];
}

interface TenantInfo {
  name: string;
  disabled: boolean;
  webhook: { url: string } | null;
  producers: ProducerInfo[];
  hostKeys: KeyInfo[];
}

function Keys({ keys, label }: { keys: KeyInfo[]; label: string }) {
  if (keys.length === 0) return <span className="muted">no {label}</span>;
  return (
    <ul className="plain">
      {keys.map((k) => (
        <li key={k.id}>
          <span className="mono">{k.id}</span> — last used {k.lastUsedAt ? <Time iso={k.lastUsedAt} /> : "never"}
          {k.expiresAt ? (
            <>
              , expires <Time iso={k.expiresAt} />
            </>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

/** Tenants, their producers and the ids of their keys (the admin API; admin token only). */
export function Tenants({ session }: { session: Session }) {
  const admin = session.identity.kind === "admin";
  const { data, error } = usePoll(
    () => (admin ? get<{ tenants: TenantInfo[] }>("/v1/admin/tenants") : Promise.resolve({ tenants: [] })),
    5000,
    "tenants",
  );
  return (
    <section aria-labelledby="tenants-title">
      <h1 id="tenants-title">Tenants</h1>
      <p className="muted">
        Tenants, producers and the ids of their keys with their last use (at most a minute old). Secrets are never
        shown: a key is shown once, when it is created through the admin API.
      </p>
      {!admin ? <p>The tenants page needs the admin token.</p> : null}
      <ErrorNote error={error} />
      {data && admin ? (
        data.tenants.length === 0 ? (
          <p>No tenants.</p>
        ) : (
          <table className="grid">
            <caption className="sr-only">Tenants</caption>
            <thead>
              <tr>
                <th scope="col">tenant</th>
                <th scope="col">host keys</th>
                <th scope="col">producers</th>
              </tr>
            </thead>
            <tbody>
              {data.tenants.map((t) => (
                <tr key={t.name}>
                  <td>
                    <strong>{t.name}</strong>
                    {t.disabled ? <span className="badge"> disabled</span> : null}
                    {t.webhook ? <div className="muted mono">webhook {t.webhook.url}</div> : null}
                  </td>
                  <td>
                    <Keys keys={t.hostKeys} label="host keys" />
                  </td>
                  <td>
                    {t.producers.length === 0 ? (
                      <span className="muted">no producers</span>
                    ) : (
                      t.producers.map((p) => (
                        <div key={p.id} className="producer">
                          <strong className="mono">{p.id}</strong>
                          {p.disabled ? <span className="badge"> disabled</span> : null}{" "}
                          <span className="muted">
                            {p.eventTypes.join(", ")}
                            {p.rateLimitPerSec !== null ? ` · ${p.rateLimitPerSec}/s` : ""}
                          </span>
                          <Keys keys={p.keys} label="keys" />
                          <Keys keys={p.secrets} label="HMAC secrets" />
                        </div>
                      ))
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : (
        admin && !error && <p aria-live="polite">Loading…</p>
      )}
    </section>
  );
}
