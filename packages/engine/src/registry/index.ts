export {
  type ProducerInput,
  type ProducerPatch,
  RegistryAdmin,
  type TenantInput,
  type TenantPatch,
} from "./admin-ops.js";
export { Directory, RegistryWatch, type ViewListener } from "./directory.js";
export {
  type AuditEntry,
  type RegistryKeys,
  type RegistrySnapshot,
  RegistryStore,
  registryKeys,
} from "./registry-store.js";
export { keyHash, SecretKey } from "./secret-key.js";
export { describeChange, type PlannedChange, planSeed, type SeedMode } from "./seed.js";
export {
  checkSecretKey,
  type OpenRegistryOptions,
  openRegistry,
  resolveSecretKey,
  type SecretKeySource,
} from "./sync.js";
export {
  configOfView,
  type EventTypeView,
  type HostKeyView,
  type KeyView,
  type ProducerView,
  patchView,
  RecordSet,
  type RegistryView,
  type SecretView,
  type TenantView,
  type ViewChange,
  viewOfConfig,
  viewOfRecords,
  viewOfSet,
} from "./view.js";
