/** Small building blocks shared by the pages: polling, charts, badges, dialogs. */
import { type ReactNode, useCallback, useEffect, useId, useRef, useState } from "react";
import { ApiError } from "./api.js";
import { Link, paths } from "./router.js";

export interface Polled<T> {
  data: T | null;
  error: ApiError | Error | null;
  /** fetch again now */
  reload: () => void;
}

/** Loads `load()` now and every `everyMs` while mounted (and again when `key` changes). */
export function usePoll<T>(load: () => Promise<T>, everyMs: number, key: string): Polled<T> {
  const [state, setState] = useState<{ data: T | null; error: ApiError | Error | null; key: string }>({
    data: null,
    error: null,
    key,
  });
  const loadRef = useRef(load);
  loadRef.current = load;
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `tick` is how `reload` asks for a load now
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const data = await loadRef.current();
        if (alive) setState({ data, error: null, key });
      } catch (err) {
        if (alive) setState((s) => ({ data: s.key === key ? s.data : null, error: err as Error, key }));
      }
      if (alive && everyMs > 0) timer = setTimeout(run, everyMs);
    };
    void run();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [key, everyMs, tick]);
  return { data: state.key === key ? state.data : null, error: state.key === key ? state.error : null, reload };
}

export function ErrorNote({ error }: { error: ApiError | Error | null }) {
  if (!error) return null;
  const code = error instanceof ApiError ? `${error.code} (${error.status}): ` : "";
  return (
    <p className="error" role="alert">
      {code}
      {error.message}
    </p>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span className={`badge badge-${state}`}>{state.replace("_", " ")}</span>;
}

/** An ISO time, shown in UTC to the millisecond. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span className="muted">—</span>;
  return <time dateTime={iso}>{iso.replace("T", " ").replace("Z", " UTC")}</time>;
}

export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <section aria-label={label}>
      <pre className="json">{JSON.stringify(value, null, 2)}</pre>
    </section>
  );
}

/**
 * A line chart of one series (null = no value), with its last value and a text
 * alternative (min / max / last) for screen readers.
 */
export function Sparkline({
  title,
  values,
  unit,
  digits = 1,
}: {
  title: string;
  values: Array<number | null>;
  unit: string;
  digits?: number;
}) {
  const w = 240;
  const h = 56;
  const nums = values.filter((v): v is number => v !== null);
  const max = Math.max(1e-9, ...nums);
  const step = values.length > 1 ? w / (values.length - 1) : w;
  const points = values
    .map((v, i) => (v === null ? null : `${(i * step).toFixed(1)},${(h - 4 - (v / max) * (h - 8)).toFixed(1)}`))
    .filter(Boolean)
    .join(" ");
  const last = nums.length ? (nums[nums.length - 1] as number) : null;
  const fmt = (v: number) => v.toFixed(digits);
  const summary = nums.length
    ? `${title}: last ${fmt(last as number)} ${unit}, max ${fmt(Math.max(...nums))} ${unit} over ${values.length} samples`
    : `${title}: no data yet`;
  return (
    <figure className="chart">
      <figcaption>
        <span>{title}</span>
        <strong>{last === null ? "—" : `${fmt(last)} ${unit}`}</strong>
      </figcaption>
      <svg viewBox={`0 0 ${w} ${h}`} role="img" aria-label={summary} preserveAspectRatio="none">
        <line x1="0" y1={h - 4} x2={w} y2={h - 4} className="axis" />
        {points && <polyline points={points} className="line" />}
        {values.map((v, i) =>
          v === null ? null : (
            // biome-ignore lint/suspicious/noArrayIndexKey: one point per sample, in order
            <circle key={i} cx={i * step} cy={h - 4 - (v / max) * (h - 8)} r="2" className="dot" />
          ),
        )}
      </svg>
    </figure>
  );
}

/** Bars per partition (unprocessed entries), with the numbers in a table for assistive tech. */
export function LagBars({
  partitions,
}: {
  partitions: Array<{ partition: number; undelivered: number; pending: number; oldestUnprocessedAgeMs: number | null }>;
}) {
  const h = 70;
  const max = Math.max(1, ...partitions.map((p) => p.undelivered + p.pending));
  const bw = 100 / Math.max(1, partitions.length);
  const worst = partitions.reduce((m, p) => Math.max(m, p.oldestUnprocessedAgeMs ?? 0), 0);
  return (
    <figure className="chart wide">
      <figcaption>
        <span>Stream lag per partition (unprocessed entries)</span>
        <strong>
          {partitions.every((p) => p.undelivered + p.pending === 0)
            ? "all partitions caught up"
            : `oldest unprocessed ${worst} ms`}
        </strong>
      </figcaption>
      <svg
        viewBox={`0 0 100 ${h}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`unprocessed entries per partition: ${partitions.map((p) => `p${p.partition} ${p.undelivered + p.pending}`).join(", ")}`}
      >
        {partitions.map((p, i) => {
          const v = p.undelivered + p.pending;
          const bh = (v / max) * (h - 12);
          return <rect key={p.partition} x={i * bw + bw * 0.15} width={bw * 0.7} y={h - 10 - bh} height={bh} />;
        })}
        <line x1="0" y1={h - 10} x2="100" y2={h - 10} className="axis" />
      </svg>
      <details>
        <summary>Numbers per partition</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">partition</th>
              <th scope="col">undelivered</th>
              <th scope="col">pending (delivered, not acked)</th>
              <th scope="col">oldest unprocessed (ms)</th>
            </tr>
          </thead>
          <tbody>
            {partitions.map((p) => (
              <tr key={p.partition}>
                <td>{p.partition}</td>
                <td>{p.undelivered}</td>
                <td>{p.pending}</td>
                <td>{p.oldestUnprocessedAgeMs ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

/**
 * An action behind a confirmation: a button opens a modal <dialog> (focus moves into
 * it, Escape closes it) that says what will happen; "confirm" runs the action.
 */
export function ConfirmAction({
  label,
  title,
  children,
  confirmLabel,
  danger,
  onConfirm,
}: {
  label: string;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => Promise<void>;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const close = () => ref.current?.close();
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      close();
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        className={danger ? "danger" : undefined}
        onClick={() => {
          setError(null);
          ref.current?.showModal();
        }}
      >
        {label}
      </button>
      <dialog ref={ref} aria-labelledby={titleId}>
        <h2 id={titleId}>{title}</h2>
        {children}
        <ErrorNote error={error} />
        <div className="row">
          <button type="button" className={danger ? "danger" : undefined} disabled={busy} onClick={confirm}>
            {confirmLabel}
          </button>
          <button type="button" className="secondary" onClick={close}>
            Keep as is
          </button>
        </div>
      </dialog>
    </>
  );
}

/** A list of wait ids, each a link to its wait page ("None." when empty). */
export function WaitLinks({ ids }: { ids: string[] }) {
  if (ids.length === 0) return <p className="muted">None.</p>;
  return (
    <ul>
      {ids.map((w) => (
        <li key={w}>
          <Link to={paths.wait(w)} className="mono">
            {w}
          </Link>
        </li>
      ))}
    </ul>
  );
}

/** The admin's tenant filter: one of the session's tenants, or "" for all of them. */
export function TenantSelect({
  tenants,
  value,
  onChange,
  name,
}: {
  tenants: string[];
  value: string;
  onChange: (tenant: string) => void;
  name?: string;
}) {
  return (
    <label>
      Tenant
      <select name={name} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">all tenants</option>
        {tenants.map((t) => (
          <option key={t} value={t}>
            {t}
          </option>
        ))}
      </select>
    </label>
  );
}
