import { get, type Overview as OverviewData, query, type Session } from "../api.js";
import { ErrorNote, LagBars, Sparkline, usePoll } from "../components.js";
import { Link, paths } from "../router.js";
import { HttpErrors, QueueDepths } from "./OverviewFigures.js";

export function Overview({ session }: { session: Session }) {
  const { data, error } = usePoll(() => get<OverviewData>(`/console/api/overview${query({})}`), 2000, "overview");
  const admin = session.identity.kind === "admin";
  return (
    <section aria-labelledby="overview-title">
      <h1 id="overview-title">Overview</h1>
      <ErrorNote error={error} />
      {!data ? (
        <p aria-live="polite">Loading…</p>
      ) : (
        <>
          <h2>Waits by state</h2>
          <table className="grid">
            <thead>
              <tr>
                <th scope="col">tenant</th>
                <th scope="col">waiting</th>
                <th scope="col">settled (resolved, timed out, cancelled; kept)</th>
              </tr>
            </thead>
            <tbody>
              {data.tenants.map((t) => (
                <tr key={t.tenant}>
                  <th scope="row">{t.tenant}</th>
                  <td>
                    <Link to={paths.waits(query({ tenant: t.tenant, state: "waiting" }))}>
                      {t.waiting.toLocaleString("en")}
                    </Link>
                  </td>
                  <td>
                    <Link to={paths.waits(query({ tenant: t.tenant }))}>{t.settled.toLocaleString("en")}</Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="muted">
            Settled since this process started:{" "}
            {Object.entries(data.totals.resolutions)
              .map(([k, v]) => `${k} ${v}`)
              .join(", ") || "none"}
            {admin && data.overdue !== null ? ` · past their deadline, not yet timed out: ${data.overdue}` : ""}
          </p>

          <h2>Events</h2>
          <p className="muted">
            Per-second rates over the last two minutes, sampled every 2 s from this api process's counters.
          </p>
          <div className="charts">
            <Sparkline title="accepted" unit="/s" values={data.series.map((p) => p.accepted)} />
            <Sparkline title="duplicate" unit="/s" values={data.series.map((p) => p.duplicate)} />
            {admin && <Sparkline title="rejected" unit="/s" values={data.series.map((p) => p.rejected)} />}
            <Sparkline
              title="timeout lateness (mean)"
              unit="ms"
              digits={0}
              values={data.series.map((p) => p.latenessMs)}
            />
          </div>
          <p className="muted">
            Totals of this process: accepted {data.totals.accepted}, duplicate {data.totals.duplicate}
            {data.totals.rejected !== null && (
              <>
                , rejected <Link to={paths.rejections()}>{data.totals.rejected}</Link>
              </>
            )}
            ; timeouts fired {data.totals.timeoutsFired}
            {data.totals.latenessMeanMs !== null && `, mean lateness ${data.totals.latenessMeanMs.toFixed(0)} ms`}.
          </p>

          {data.http !== null && <HttpErrors http={data.http} />}
          {data.queues !== null && <QueueDepths queues={data.queues} />}

          {data.partitions !== null && (
            <>
              <h2>Matching backlog</h2>
              <LagBars partitions={data.partitions} />
            </>
          )}
        </>
      )}
    </section>
  );
}
