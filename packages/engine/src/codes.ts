/**
 * Outcome codes returned by the Lua transitions (first element of every reply).
 * Mirrored in lua/includes/common.lua; a test checks both tables agree.
 */
export const Code = {
  CREATED: 1,
  EXISTS: 2,
  CONFLICT: 3,
  DUPLICATE: 4,
  PENDING: 5,
  RESOLVED: 6,
  NOT_DUE: 7,
  BACKLOG: 8,
  OK: 9,
  NOT_FOUND: -1,
  NOT_WAITING: -2,
  NOT_RESOLVED: -3,
} as const;

export type CodeName = keyof typeof Code;
export type CodeValue = (typeof Code)[CodeName];
