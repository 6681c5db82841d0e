export {
  continuationQueueName,
  Dispatcher,
  type DispatcherOptions,
  signWebhook,
  WEBHOOK_QUEUE,
} from "./dispatcher.js";
export { type FireResult, lateness } from "./firing.js";
export { Matcher, type MatcherOptions } from "./matcher.js";
export { Scheduler, type SchedulerOptions, TIMEOUT_QUEUE } from "./scheduler.js";
