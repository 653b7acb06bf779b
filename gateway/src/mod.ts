/** Public entry of the package: config, protocol helpers and error codes for embedding and tooling. */
export { loadConfig, settingsTable, type Config } from "./config/config.js";
export { SETTINGS } from "./config/settings.js";
export { ErrorCode, CloseCode } from "./protocol/codes.js";
export { checkChannel, checkPattern, matches, SubjectMapper } from "./protocol/channel.js";
export { parseClientFrame, type ClientFrame, type StartPosition } from "./protocol/frames.js";
export { GatewayError, ConfigError, ProcessError, WIRE_ERRORS } from "./errors.js";
