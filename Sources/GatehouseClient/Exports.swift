// One `import GatehouseClient` is enough for an app: the wire types it names (`ErrorCode`,
// `UserPayload`, `GateDecision`, `EntitlementsPayload`, `JSONValue`, `ProfilePatch`,
// `PersonName`, …) and the parts of the core that describe a preset to the device
// (`PublicConfiguration` and what it holds: the Stripe prices, the pacing of phone codes, the
// password and handle policies, address checks) or name values the server and the SDK share
// (`PlanState`, `SignOutScope`, `GateSurface`).
// The rest of the core (the server's `User`, `Session`, stores' records) stays out of an app's
// namespace.
@_exported import GatehouseWire
@_exported import struct GatehouseCore.PublicConfiguration
@_exported import struct GatehouseCore.AppSettings
@_exported import struct GatehouseCore.PasswordPolicySettings
@_exported import struct GatehouseCore.HandleSettings
@_exported import enum GatehouseCore.EnumerationProtection
@_exported import struct GatehouseCore.EntitlementSettings
@_exported import struct GatehouseCore.PlanSettings
@_exported import struct GatehouseCore.ProductSettings
@_exported import struct GatehouseCore.StripeSettings
@_exported import struct GatehouseCore.PhoneCodeTiming
@_exported import struct GatehouseCore.TrialSettings
@_exported import struct GatehouseCore.ActionSettings
@_exported import struct GatehouseCore.GateRule
@_exported import struct GatehouseCore.PasswordPolicy
@_exported import struct GatehouseCore.PasswordProblem
@_exported import struct GatehouseCore.HandlePolicy
@_exported import enum GatehouseCore.EmailAddress
@_exported import enum GatehouseCore.ProfilePolicy
@_exported import enum GatehouseCore.PluralCopy
@_exported import enum GatehouseCore.PlanSource
@_exported import struct GatehouseCore.GateSurface
