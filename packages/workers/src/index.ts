export {
  continuationQueueName,
  Dispatcher,
  type DispatcherOptions,
} from "./dispatcher.js";
export { type FireResult, lateness } from "./firing.js";
export { continuationJobs, dispatchedEntries, type Handout } from "./handouts.js";
export {
  ADD_ONE,
  addStepJobs,
  addStepJobsRecorded,
  JOB_ADDS_LUA,
  type JobToAdd,
  STEP_LUA,
  type StepRecord,
} from "./job-adds.js";
export { Matcher, type MatcherOptions } from "./matcher.js";
export { type BucketJob, type PlannerOptions, TIMEOUT_QUEUE, TimeoutPlanner } from "./planner.js";
export { expireOutlived } from "./retention.js";
export { Scheduler, type SchedulerOptions } from "./scheduler.js";
export { signWebhook, WEBHOOK_QUEUE } from "./webhooks.js";
