/**
 * Runs a benchmark module against the TypeScript sources of the workspace packages.
 * The packages export their sources under the `@rendezvous/source` condition (their
 * `dist` is only there after a build); tsx alone does not add that condition, so
 * this registers a tiny resolve hook that does, then imports the module. Its static
 * imports are resolved after the hook is in place.
 */
import { register } from "node:module";

const hook = `export async function resolve(specifier, context, next) {
  return next(specifier, { ...context, conditions: [...context.conditions, "@rendezvous/source"] });
}`;

export async function runFromSource(module: URL): Promise<void> {
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
  const mod = (await import(module.href)) as { main: () => Promise<void> };
  await mod.main();
}
