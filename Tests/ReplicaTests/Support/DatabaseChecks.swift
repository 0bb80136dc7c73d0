import Foundation
import Testing

@testable import Replica

/// Plain SQL on a database file through a connection of its own, as the
/// `sqlite3` tool reads it. Every statement runs to its end, so no read
/// snapshot stays open.
enum RawSQL {
    static func rows<T>(_ path: String, _ sql: String, _ row: (SQLiteStatement) throws -> T) throws -> [T] {
        let connection = try SQLiteConnection(path: path, create: false)
        let statement = try connection.cached(sql)
        var result: [T] = []
        while try statement.step() { result.append(try row(statement)) }
        return result
    }

    static func int(_ path: String, _ sql: String) throws -> Int64? {
        try rows(path, sql) { $0.isNull(0) ? nil : $0.int64(0) }.first ?? nil
    }

    static func execute(_ path: String, _ sql: String) throws {
        try SQLiteConnection(path: path, create: false).execute(sql)
    }

    /// `meta.projected_offset`: up to which local offset the projection rows are folded.
    static func projectedOffset(_ path: String) throws -> Int64? {
        try int(path, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'projected_offset'")
    }

    /// Every entity with events, as `(entity_type, entity_id)`.
    static func entities(_ path: String) throws -> [(type: String, id: String)] {
        try rows(
            path,
            """
            SELECT entity_type, entity_id FROM entities n
            WHERE EXISTS (SELECT 1 FROM events WHERE entity = n.id)
               OR EXISTS (SELECT 1 FROM event_blocks b, json_each(b.events) j WHERE j.value ->> 2 = n.id)
            """
        ) { (type: $0.text(0), id: $0.text(1)) }
    }

    /// Every entity row's projection as stored: `type/id: state`.
    static func entityStates(_ path: String) throws -> [String] {
        try rows(path, "SELECT entity_type, entity_id, state FROM entities ORDER BY entity_type, entity_id") {
            "\($0.text(0))/\($0.text(1)): \($0.isNull(2) ? "NULL" : $0.text(2))"
        }
    }

    /// The `items` view, as `Item` values.
    static func items(_ path: String) throws -> [Item] {
        try rows(path, "SELECT id, name, quantity, note, deleted, last_modified_ms FROM items ORDER BY id") {
            var item = Item(id: $0.text(0))
            item.name = $0.text(1)
            item.quantity = $0.int64(2)
            item.note = $0.isNull(3) ? nil : $0.text(3)
            item.deleted = $0.int64(4) != 0
            item.lastModifiedMs = $0.int64(5)
            return item
        }
    }

    /// Every stored event's local offset, entity row and `entity_prev`, in
    /// offset order: the rows of `events` and, read with SQLite's own
    /// `json_each` as the `sqlite3` tool reads them, the events of the blocks.
    static let allEventsSQL = """
        SELECT local_offset, entity, entity_prev FROM events
        UNION ALL
        SELECT b.first_offset + j.key, j.value ->> 2, j.value ->> 5 FROM event_blocks b, json_each(b.events) j
        ORDER BY 1
        """

    /// Where the entity chains disagree with the events as stored, computed
    /// here rather than by the migration's own SQL: each event's
    /// `entity_prev` must be the entity's previous local offset (NULL for
    /// its first), and (with `checkHeads`) `entities.last_offset` its newest.
    static func chainProblems(_ path: String, checkHeads: Bool) throws -> [String] {
        let events = try rows(path, allEventsSQL) {
            (offset: $0.int64(0), entity: $0.int64(1), previous: $0.isNull(2) ? nil : Optional($0.int64(2)))
        }
        var newest: [Int64: Int64] = [:]
        var problems: [String] = []
        for event in events {
            if event.previous != newest[event.entity] {
                problems.append(
                    "event \(event.offset): entity_prev \(String(describing: event.previous)), "
                        + "expected \(String(describing: newest[event.entity]))")
            }
            newest[event.entity] = event.offset
        }
        guard checkHeads else { return problems }
        let heads = try rows(path, "SELECT id, last_offset FROM entities ORDER BY id") {
            (entity: $0.int64(0), last: $0.isNull(1) ? nil : Optional($0.int64(1)))
        }
        for head in heads where head.last != newest[head.entity] {
            problems.append(
                "entity \(head.entity): last_offset \(String(describing: head.last)), "
                    + "expected \(String(describing: newest[head.entity]))")
        }
        return problems
    }
}

/// Expects `log` to show the same items and state hash as `reference`.
func expectSameState(
    _ log: EventLog, _ reference: EventLog, _ context: String, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(
        try log.projections(Item.self) == (try reference.projections(Item.self)), "\(context)",
        sourceLocation: sourceLocation)
    #expect(try log.stateHash() == (try reference.stateHash()), "\(context)", sourceLocation: sourceLocation)
}
