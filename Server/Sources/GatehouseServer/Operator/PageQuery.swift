import GatehouseCore
import GatehouseWire

/// A page of an operator's list as the request asked for it: how many rows, and after (or
/// before) which sequence number. Parsed and checked where the request is read.
struct PageQuery: Sendable, Equatable {
    var limit: Int
    var cursor: Int64?
    /// The cursor as sent (an empty page of the event feed answers it again).
    var cursorText: String?

    /// 400 `invalid_request` for a limit outside `range` or a cursor that is not a sequence number.
    init(limit limitText: String?, default defaultLimit: Int, range: ClosedRange<Int>, cursor text: String?, allowsNegative: Bool) throws {
        guard let limit = Int(limitText ?? String(defaultLimit)), range.contains(limit) else {
            throw GatehouseError.invalidRequest("The limit must be between \(range.lowerBound) and \(range.upperBound).")
        }
        self.limit = limit
        try readCursor(text, allowsNegative: allowsNegative)
    }

    /// Sets the cursor from its text (a list that checks other parameters between the limit and
    /// the cursor reads it last).
    mutating func readCursor(_ text: String?, allowsNegative: Bool) throws {
        cursorText = text
        cursor = nil
        if let text, !text.isEmpty {
            guard let sequence = Int64(text), allowsNegative || sequence >= 0 else { throw GatehouseError.invalidRequest("The cursor is not valid.") }
            cursor = sequence
        }
    }
}
