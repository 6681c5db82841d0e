/**
 * The process's current registry view, and the watch that keeps it current: a change is
 * published on the registry channel (reload at once) and the version is polled as a
 * fallback (a lost message, a reconnection). Replacing the view also replaces
 * `config.tenants` and `config.eventTypes`, which the roles read where they need them.
 */
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import type { Subscriber } from "../subscriber.js";
import type { RegistryStore } from "./registry-store.js";
import type { SecretKey } from "./secret-key.js";
import {
  configEventTypes,
  configOfTenant,
  configOfView,
  patchView,
  RecordSet,
  type RegistryView,
  type ViewChange,
  viewOfConfig,
  viewOfSet,
} from "./view.js";

/** Told each new view, and what changed from the previous one (null: anything may have). */
export type ViewListener = (view: RegistryView, change: ViewChange | null) => void;

export class Directory {
  #view: RegistryView;
  readonly #config: Config;
  readonly #listeners = new Set<ViewListener>();

  /** Starts with the static view of the config's tenants and event types. */
  constructor(config: Config) {
    this.#config = config;
    this.#view = viewOfConfig(config);
  }

  get view(): RegistryView {
    return this.#view;
  }

  /** Calls `fn` with every new view; returns the unsubscribe. */
  onChange(fn: ViewListener): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** The new view; with `change`, only what it names is projected again. */
  replace(view: RegistryView, change: ViewChange | null = null): void {
    this.#view = view;
    if (change === null) {
      const projected = configOfView(view);
      this.#config.tenants = projected.tenants;
      this.#config.eventTypes = projected.eventTypes;
    } else {
      // a copy, not an edit: a reader in the middle of walking the old object keeps it whole
      const tenants = { ...this.#config.tenants };
      for (const name of change.tenants) {
        const t = view.tenants.get(name);
        if (t) tenants[name] = configOfTenant(t);
        else delete tenants[name];
      }
      this.#config.tenants = tenants;
      if (change.eventTypes.size > 0) this.#config.eventTypes = configEventTypes(view);
    }
    for (const fn of this.#listeners) fn(view, change);
  }
}

export interface WatchOptions {
  store: RegistryStore;
  key: SecretKey;
  directory: Directory;
  /** a connection of its own for SUBSCRIBE (closed by the caller's resources) */
  subscriber: Subscriber;
  logger: Logger;
  /** the version served and the reloads @defaultValue none */
  metrics?: Metrics;
  /** @defaultValue 500 */
  pollMs?: number;
}

/** Keeps a Directory at the registry's version until `stop()`. */
export class RegistryWatch {
  readonly #o: WatchOptions;
  /** the records the current view was built from (null before the first load) */
  #set: RecordSet | null = null;
  #timer: NodeJS.Timeout | undefined;
  #loading: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(o: WatchOptions) {
    this.#o = o;
  }

  /** Loads the registry now, then follows it. */
  async start(): Promise<void> {
    await this.#load();
    const { subscriber, store } = this.#o;
    subscriber.on("message", (channel: string, message: string) => {
      if (channel === store.keys.channel && Number(message) > this.#o.directory.view.version) this.refresh();
    });
    await subscriber.subscribe(store.keys.channel).catch((err: unknown) => {
      // the poll still finds every change
      this.#o.logger.warn({ err: (err as Error).message }, "registry subscribe failed; polling only");
    });
    const poll = () => {
      if (this.#stopped) return;
      store
        .version()
        .then((v) => {
          if (v !== this.#o.directory.view.version) this.refresh();
        })
        .catch(() => {
          // Redis trouble: the next poll tries again; the current view keeps serving
        })
        .finally(() => {
          if (!this.#stopped) this.#timer = setTimeout(poll, this.#o.pollMs ?? 500);
        });
    };
    this.#timer = setTimeout(poll, this.#o.pollMs ?? 500);
  }

  /** Reloads (once more after a load in progress, so no change is missed). */
  refresh(): void {
    if (this.#loading) {
      this.#again = true;
      return;
    }
    this.#loading = this.#load()
      .catch((err: unknown) => {
        this.#o.metrics?.registryReloads.inc({ result: "failed" });
        this.#o.logger.warn({ err: (err as Error).message }, "registry reload failed; keeping the current view");
      })
      .finally(() => {
        this.#loading = undefined;
        if (this.#again && !this.#stopped) {
          this.#again = false;
          this.refresh();
        }
      });
  }

  async #load(): Promise<void> {
    const { store, key, directory, logger } = this.#o;
    const held = directory.view;
    if (this.#set !== null) {
      // what changed since the held version, when the changelog reaches back to it
      const delta = await store.changes(held.version);
      if (delta !== null) {
        if (delta.version === held.version) return;
        const touched = { tenants: new Set<string>(), eventTypes: new Set<string>() };
        const bad: string[] = [];
        for (const [field, raw] of delta.fields) this.#set.apply(field, raw, touched, bad);
        const { view, undecryptable } = patchView(held, delta.version, this.#set, key, touched);
        this.#report(bad, undecryptable);
        directory.replace(view, touched);
        this.#loaded(view.version);
        return;
      }
    }
    const snap = await store.load();
    if (snap.version === held.version && this.#set !== null) return;
    this.#set = new RecordSet(snap.records);
    const { view, undecryptable } = viewOfSet(snap.version, this.#set, key);
    this.#report(snap.bad, undecryptable);
    directory.replace(view);
    this.#loaded(view.version);
    logger.debug({ version: view.version }, "registry loaded whole");
  }

  #report(bad: string[], undecryptable: string[]): void {
    if (bad.length > 0) this.#o.logger.error({ fields: bad }, "registry records that do not decode were skipped");
    if (undecryptable.length > 0) {
      this.#o.logger.error({ ids: undecryptable }, "registry secrets that do not decrypt with this key were skipped");
    }
  }

  #loaded(version: number): void {
    this.#o.metrics?.registryReloads.inc({ result: "ok" });
    this.#o.metrics?.registryVersion.set(version);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#loading;
  }
}
