import Foundation

/// The index of thin-client events by id, in two tables (docs/storage.md
/// "The thin-client index"): `thin_client_recent` takes every new id and
/// stays small, so the random ids of one push touch few pages;
/// `thin_client_events` holds the rest and takes the recent ids in one
/// sorted pass once `Options.thinClientRecentLimit` of them are held. An id is in
/// at most one of the two, with the offset of the first copy to arrive.
extension EventLog {
    /// Ids indexed by this connection between two counts of `thin_client_recent`.
    var thinClientRecentCheckEvery: Int { max(1, options.thinClientRecentLimit / 16) }

    /// Inside a transaction: the local offset of the first copy of `eventID`
    /// held in a thin-client feed, if any.
    func thinClientOffset(of eventID: UUID) throws -> Int64? {
        let statement = try db.cached(
            """
            SELECT local_offset FROM thin_client_recent WHERE event_id = ?1
            UNION ALL SELECT local_offset FROM thin_client_events WHERE event_id = ?1
            """)
        try statement.bind([.uuid(eventID)])
        defer { statement.reset() }
        return try statement.step() ? statement.int64(0) : nil
    }

    /// Inside a write transaction, for an event just stored in a thin-client
    /// feed: indexes its id, unless a copy is indexed already (the same
    /// event pushed through two relays).
    func indexThinClientEvent(_ eventID: UUID, offset: Int64) throws {
        try db.cached(
            """
            INSERT OR IGNORE INTO thin_client_recent (event_id, local_offset)
            SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM thin_client_events WHERE event_id = ?1)
            """
        ).run([.uuid(eventID), .int(offset)])
        thinClientIndexedSinceCheck += 1
        guard thinClientIndexedSinceCheck >= thinClientRecentCheckEvery else { return }
        thinClientIndexedSinceCheck = 0
        let count = try db.cached("SELECT count(*) FROM thin_client_recent")
        defer { count.reset() }
        guard try count.step(), count.int64(0) >= Int64(options.thinClientRecentLimit) else { return }
        count.reset()
        try mergeRecentThinClientIDs()
    }

    /// Inside a write transaction: moves every id of `thin_client_recent`
    /// to `thin_client_events`, in key order, so that each page of the
    /// large table is written once for all the ids it takes.
    func mergeRecentThinClientIDs() throws {
        try db.cached(
            """
            INSERT OR IGNORE INTO thin_client_events (event_id, local_offset)
            SELECT event_id, local_offset FROM thin_client_recent ORDER BY event_id
            """
        ).run([])
        try db.cached("DELETE FROM thin_client_recent").run([])
    }
}
