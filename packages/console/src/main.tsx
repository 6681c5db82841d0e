/**
 * The operator console: sign in with the admin token (every tenant) or a host key
 * (its tenant), kept in this tab's sessionStorage; then overview, waits, one wait,
 * one event and rejected signals. Bull Board (/admin/queues) is linked for the admin.
 */
import { type FormEvent, StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { ApiError, get, getToken, type Session, setToken } from "./api.js";
import { ErrorNote } from "./components.js";
import { EventPage } from "./pages/EventPage.js";
import { Overview } from "./pages/Overview.js";
import { Rejections } from "./pages/Rejections.js";
import { Tenants } from "./pages/Tenants.js";
import { WaitPage } from "./pages/WaitPage.js";
import { Waits } from "./pages/Waits.js";
import { Link, paths, useLocation } from "./router.js";
import "./styles.css";

function SignIn({ onSession, error }: { onSession: (s: Session) => void; error: Error | null }) {
  const [token, setDraft] = useState("");
  const [failure, setFailure] = useState<Error | null>(error);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setToken(token.trim());
    try {
      onSession(await get<Session>("/console/api/session"));
    } catch (err) {
      setToken(null);
      setFailure(
        err instanceof ApiError && err.status === 401
          ? new Error("That token is not an admin token or host key.")
          : (err as Error),
      );
    }
  };
  return (
    <main id="main" className="signin">
      <h1>rendezvous console</h1>
      <form onSubmit={submit} aria-label="Sign in">
        <label>
          Admin token or host key
          <input
            type="password"
            name="token"
            autoComplete="off"
            required
            value={token}
            onChange={(e) => setDraft(e.target.value)}
          />
        </label>
        <p className="muted">
          The admin token shows every tenant; a host key shows its own tenant only. It is kept in this tab until you
          sign out or close it.
        </p>
        <ErrorNote error={failure} />
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

function Page({ session }: { session: Session }) {
  const { path, params } = useLocation();
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return <Overview session={session} />;
  if (parts[0] === "waits" && parts.length === 1) return <Waits session={session} params={params} />;
  if (parts[0] === "waits" && parts.length === 2) return <WaitPage id={parts[1] as string} session={session} />;
  if (parts[0] === "events" && parts.length === 4) {
    return (
      <EventPage tenant={parts[1] as string} producer={parts[2] as string} id={parts[3] as string} session={session} />
    );
  }
  if (parts[0] === "rejections") return <Rejections session={session} params={params} />;
  if (parts[0] === "tenants") return <Tenants session={session} />;
  return (
    <section>
      <h1>Not found</h1>
      <p>
        No console page at this address. <Link to={paths.overview()}>Go to the overview</Link>.
      </p>
    </section>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [checking, setChecking] = useState(getToken() !== null);
  const [error, setError] = useState<Error | null>(null);
  const { path } = useLocation();
  useEffect(() => {
    if (!getToken()) return;
    get<Session>("/console/api/session")
      .then(setSession)
      .catch((err: Error) => {
        setToken(null);
        setError(err);
      })
      .finally(() => setChecking(false));
  }, []);
  if (checking) return <p>Loading…</p>;
  if (!session) return <SignIn onSession={setSession} error={error} />;
  const current = (p: string) => (path === p || (p !== "/" && path.startsWith(p)) ? "page" : undefined);
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header>
        <nav aria-label="Console">
          <strong className="brand">rendezvous</strong>
          <Link to={paths.overview()} aria-current={current("/")}>
            Overview
          </Link>
          <Link to={paths.waits()} aria-current={current("/waits")}>
            Waits
          </Link>
          <Link to={paths.rejections()} aria-current={current("/rejections")}>
            Rejected signals
          </Link>
          {session.identity.kind === "admin" ? (
            <Link to={paths.tenants()} aria-current={current("/tenants")}>
              Tenants
            </Link>
          ) : null}
          {session.board ? <a href={`${session.board}`}>Bull Board</a> : null}
        </nav>
        <div className="who">
          <span data-testid="identity">
            {session.identity.kind === "admin" ? "admin (all tenants)" : `tenant ${session.identity.tenant}`}
          </span>
          <button
            type="button"
            className="secondary"
            onClick={() => {
              setToken(null);
              setSession(null);
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Page session={session} />
      </main>
    </>
  );
}

createRoot(document.getElementById("root") as HTMLElement).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
