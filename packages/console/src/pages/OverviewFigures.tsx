/**
 * The overview's operator figures (docs/console.md): the api process's HTTP error rate, and
 * the depths of the continuation, webhook and timeout queues with their oldest waiting job.
 */
import type { HttpFigures, QueueDepth, QueueFigures } from "../api.js";
import { Sparkline } from "../components.js";

const share = (v: number | null) => (v === null ? "—" : `${(v * 100).toFixed(1)} %`);
const rate = (v: number) => `${v.toFixed(2)}/s`;

export function HttpErrors({ http }: { http: HttpFigures }) {
  const r = http.recent;
  return (
    <>
      <h2>HTTP errors</h2>
      <p className="muted">
        Answers of this api process (every route, the console's own calls included), sampled every 2 s.
      </p>
      <div className="charts">
        <Sparkline title="4xx answers" unit="/s" digits={2} values={http.series.map((p) => p.clientErrors)} />
        <Sparkline title="5xx answers" unit="/s" digits={2} values={http.series.map((p) => p.serverErrors)} />
        <Sparkline title="requests" unit="/s" values={http.series.map((p) => p.requests)} />
      </div>
      <table className="grid" aria-label="HTTP error rate">
        <thead>
          <tr>
            <th scope="col" />
            <th scope="col">per second</th>
            <th scope="col">share of requests</th>
            <th scope="col">since start</th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <th scope="row">4xx</th>
            <td data-testid="http-4xx-rate">{rate(r.clientErrorsPerSec)}</td>
            <td data-testid="http-4xx-share">{share(r.clientErrorShare)}</td>
            <td data-testid="http-4xx-total">{http.totals.clientErrors}</td>
          </tr>
          <tr>
            <th scope="row">5xx</th>
            <td data-testid="http-5xx-rate">{rate(r.serverErrorsPerSec)}</td>
            <td data-testid="http-5xx-share">{share(r.serverErrorShare)}</td>
            <td data-testid="http-5xx-total">{http.totals.serverErrors}</td>
          </tr>
          <tr>
            <th scope="row">all</th>
            <td>{rate(r.requestsPerSec)}</td>
            <td />
            <td>{http.totals.requests}</td>
          </tr>
        </tbody>
      </table>
      <p className="muted">Rates and shares over the last {Math.round(r.seconds)} s.</p>
    </>
  );
}

function age(ms: number | null): string {
  if (ms === null) return "—";
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 1000)} s`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

function Row({ name, depth, id }: { name: string; depth: QueueDepth; id: string }) {
  return (
    <tr data-testid={`queue-${id}`}>
      <th scope="row">{name}</th>
      <td data-testid={`queue-${id}-waiting`}>{depth.waiting.toLocaleString("en")}</td>
      <td>{depth.active.toLocaleString("en")}</td>
      <td>{depth.delayed.toLocaleString("en")}</td>
      <td>{depth.failed.toLocaleString("en")}</td>
      <td data-testid={`queue-${id}-oldest`}>{age(depth.oldestWaitingAgeMs)}</td>
    </tr>
  );
}

export function QueueDepths({ queues }: { queues: QueueFigures }) {
  const c = queues.continuations;
  return (
    <>
      <h2>Queues</h2>
      <table className="grid" aria-label="Queue depths">
        <thead>
          <tr>
            <th scope="col">queue</th>
            <th scope="col">waiting</th>
            <th scope="col">active</th>
            <th scope="col">delayed</th>
            <th scope="col">failed</th>
            <th scope="col">oldest waiting</th>
          </tr>
        </thead>
        <tbody>
          <Row name={`continuations (${c.queues} queue${c.queues === 1 ? "" : "s"})`} depth={c} id="continuations" />
          {queues.webhooks && <Row name="webhooks" depth={queues.webhooks} id="webhooks" />}
          {queues.timeouts && <Row name="timeouts" depth={queues.timeouts} id="timeouts" />}
          {queues.busiest.map((q) => (
            <Row key={q.queue} name={q.queue} depth={q} id={q.queue} />
          ))}
        </tbody>
      </table>
      <p className="muted">
        Read from the BullMQ queues at most once a second (the figures of <code>/metrics</code>); below the totals, the
        continuation queues holding jobs, the most waiting first.
      </p>
    </>
  );
}
