export { ConsumerLoop, type ConsumerLoopOptions, type StreamEntry } from "./consumer-loop.js";
export {
  continuationQueueName,
  Dispatcher,
  type DispatcherOptions,
  signWebhook,
  WEBHOOK_QUEUE,
} from "./dispatcher.js";
export { Matcher, type MatcherOptions } from "./matcher.js";
