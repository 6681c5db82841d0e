/**
 * Measures of client JSON that never recurse: a parsed body may nest as deep as its
 * bytes allow (a 32 MiB batch, millions of levels), and every recursive walk
 * (`JSON.stringify`, zod, ajv, canonicalJson, the store's encoders) would overflow
 * the stack on it. These run first; the recursive walks only see what they let pass.
 */

/** UTF-8 bytes of a JSON scalar as JSON.stringify writes it (`null` for what it cannot write). */
function scalarBytes(v: unknown): number {
  if (typeof v === "string") return Buffer.byteLength(JSON.stringify(v));
  if (typeof v === "number") return Number.isFinite(v) ? String(v).length : 4;
  if (typeof v === "boolean") return v ? 4 : 5;
  return 4; // null, and undefined / functions inside arrays
}

/** What JSON.stringify leaves out of an object: its undefined, function and symbol values. */
const omitted = (v: unknown) => v === undefined || typeof v === "function" || typeof v === "symbol";

/**
 * Whether `Buffer.byteLength(JSON.stringify(value))` exceeds `max`, for parsed JSON
 * (plain objects, arrays, strings, finite numbers, booleans, null). Iterative, and it
 * stops as soon as the count passes `max`, so a huge value costs no more than `max`.
 */
export function jsonBytesOver(value: unknown, max: number): boolean {
  let bytes = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== "object") {
      bytes += scalarBytes(v);
    } else if (Array.isArray(v)) {
      bytes += v.length > 0 ? 1 + v.length : 2; // brackets and commas
      for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    } else {
      let members = 0;
      for (const key of Object.keys(v)) {
        const child = (v as Record<string, unknown>)[key];
        if (omitted(child)) continue;
        members++;
        bytes += Buffer.byteLength(JSON.stringify(key)) + 1; // "key":
        stack.push(child);
      }
      bytes += members > 0 ? 1 + members : 2; // braces and commas
    }
    if (bytes > max) return true;
  }
  return bytes > max;
}
