// Test hook (node --import): appends to $MODULE_LOG_FILE every module URL a process
// resolves that contains $MODULE_LOG_MATCH, so a test can tell what a process loaded.
import { register } from "node:module";

register(
  `data:text/javascript,${encodeURIComponent(`
import { appendFileSync } from "node:fs";
const file = process.env.MODULE_LOG_FILE;
const match = process.env.MODULE_LOG_MATCH ?? "";
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (file && resolved.url.includes(match)) appendFileSync(file, resolved.url + "\\n");
  return resolved;
}`)}`,
);
