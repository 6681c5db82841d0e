export { Scheduler, type SchedulerOptions, TIMEOUT_QUEUE } from "./scheduler.js";
