/**
 * A minimal client-side router over the History API: every console page lives under
 * /console (the server answers any such path with index.html). Links are real
 * anchors (keyboard, middle-click, copy link all work).
 */
import { type AnchorHTMLAttributes, type MouseEvent, useEffect, useState } from "react";

export const BASE = "/console";

export interface Location {
  /** the path below /console, starting with "/" */
  path: string;
  params: URLSearchParams;
}

function current(): Location {
  const raw = window.location.pathname;
  const path = raw.startsWith(BASE) ? raw.slice(BASE.length) || "/" : "/";
  return { path, params: new URLSearchParams(window.location.search) };
}

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false): void {
  const url = to.startsWith("/") ? `${BASE}${to}` : to;
  if (replace) window.history.replaceState(null, "", url);
  else window.history.pushState(null, "", url);
  for (const l of listeners) l();
  window.scrollTo(0, 0);
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return loc;
}

/** A link inside the console (`to` is a path below /console). */
export function Link({ to, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a href={`${BASE}${to}`} onClick={onClick} {...rest} />;
}

export const paths = {
  overview: () => "/",
  waits: (q = "") => `/waits${q}`,
  wait: (id: string) => `/waits/${encodeURIComponent(id)}`,
  event: (tenant: string, producer: string, id: string) =>
    `/events/${encodeURIComponent(tenant)}/${encodeURIComponent(producer)}/${encodeURIComponent(id)}`,
  rejections: () => "/rejections",
  tenants: () => "/tenants",
};
