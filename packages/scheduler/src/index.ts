export { type FireResult, lateness } from "./firing.js";
export { Scheduler, type SchedulerOptions, TIMEOUT_QUEUE } from "./scheduler.js";
