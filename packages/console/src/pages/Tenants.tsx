import { get, query, type Session } from "../api.js";
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

/** A tenant's usage of its quotas, as `GET /v1/tenant/usage` answers it (limit null: none). */
interface TenantUsage {
  tenant: string;
  quotas: {
    waitingWaits: { usage: number; limit: number | null };
    bufferedEvents: { usage: number; limit: number | null };
    hostRequestsPerSec: { limit: number | null };
    producerEventsPerSec: { limit: number | null };
  };
}

/** Tenants whose usage the page reads (one request each per refresh). */
const USAGE_TENANTS = 100;

function Count({ label, c }: { label: string; c: { usage: number; limit: number | null } }) {
  const at = c.limit !== null && c.usage >= c.limit;
  return (
    <li>
      {label}{" "}
      <span className={at ? "mono error" : "mono"}>
        {c.usage} / {c.limit === null ? "no limit" : c.limit}
      </span>
      {at ? (
        <>
          {" "}
          <span className="badge badge-timed_out">at quota</span>
        </>
      ) : null}
    </li>
  );
}

function Usage({ usage }: { usage: TenantUsage | undefined }) {
  if (!usage) return <span className="muted">not read</span>;
  const q = usage.quotas;
  const rate = (limit: number | null) => (limit === null ? "no limit" : `${limit}/s`);
  return (
    <ul className="plain" aria-label={`usage of ${usage.tenant}`}>
      <Count label="waiting waits" c={q.waitingWaits} />
      <Count label="buffered events" c={q.bufferedEvents} />
      <li>
        host requests <span className="mono">{rate(q.hostRequestsPerSec.limit)}</span>
      </li>
      <li>
        producer events <span className="mono">{rate(q.producerEventsPerSec.limit)}</span>
      </li>
    </ul>
  );
}

/** The tenants and the usage of the first USAGE_TENANTS of them (a usage that fails to read is left out). */
async function loadTenants(): Promise<{ tenants: TenantInfo[]; usage: Map<string, TenantUsage> }> {
  const { tenants } = await get<{ tenants: TenantInfo[] }>("/v1/admin/tenants");
  const read = await Promise.all(
    tenants.slice(0, USAGE_TENANTS).map((t) =>
      get<{ usage: TenantUsage }>(`/v1/tenant/usage${query({ tenant: t.name })}`).then(
        (r) => r.usage,
        () => null,
      ),
    ),
  );
  const usage = new Map<string, TenantUsage>();
  for (const u of read) if (u) usage.set(u.tenant, u);
  return { tenants, usage };
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
    () => (admin ? loadTenants() : Promise.resolve({ tenants: [], usage: new Map<string, TenantUsage>() })),
    5000,
    "tenants",
  );
  return (
    <section aria-labelledby="tenants-title">
      <h1 id="tenants-title">Tenants</h1>
      <p className="muted">
        Tenants, their usage against their quotas (counts as the tenant's counters hold them; the limits in force, from
        the registry or the config file), producers and the ids of their keys with their last use (at most a minute
        old). Secrets are never shown: a key is shown once, when it is created through the admin API.
      </p>
      {data && data.tenants.length > USAGE_TENANTS ? (
        <p className="muted">Usage is shown for the first {USAGE_TENANTS} tenants.</p>
      ) : null}
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
                <th scope="col">usage / quota</th>
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
                    <Usage usage={data.usage.get(t.name)} />
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
