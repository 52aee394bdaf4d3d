import Foundation
@testable import RelayMetrics
import Synchronization
import XCTest

/// What the scraping test thread and the recording thread tell each other.
private final class Handover: Sendable {
    /// Set by the scraper when it has seen enough.
    let stop = Atomic<Bool>(false)
    /// Set by the writer when it stopped: how many durations it recorded.
    let recorded = Atomic<Int>(-1)
}

/// One histogram series of a scrape: its cumulative buckets (+Inf last), `_sum` and `_count`.
private struct ScrapedHistogram {
    var buckets: [Double] = []
    var sum: Double?
    var count: Double?

    /// Series `labels` (`route="a",worker="0"`) of histogram `name`; nil when the exposition has none.
    init?(_ text: [UInt8], name: String, labels: String) {
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let series = line[..<space]
            if series.hasPrefix("\(name)_bucket{\(labels),le=") { buckets.append(value) }
            if series == "\(name)_sum{\(labels)}" { sum = value }
            if series == "\(name)_count{\(labels)}" { count = value }
        }
        if buckets.isEmpty && sum == nil && count == nil { return nil }
    }
}

final class ScrapeWhileRecordingTests: XCTestCase {
    /// The durations the writer records, in turn: one in each of several buckets, a bound exactly
    /// (0.5) and one past the last bound. Powers of two, so every sum of them is exact.
    private static let durations: [Double] = [0x1p-12, 0x1p-10, 0x1p-7, 0.125, 0.5, 2, 64]

    /// The sum of the first `count` durations recorded.
    private static func sum(ofFirst count: Int) -> Double {
        let whole = durations.reduce(0, +) * Double(count / durations.count)
        return durations.prefix(count % durations.count).reduce(whole, +)
    }

    /// The guarantee WorkerHistogram documents, checked in every scrape taken while a worker
    /// records: cumulative buckets, +Inf equal to _count, nothing counted that _sum lacks, and no
    /// count going back between scrapes. Run under ThreadSanitizer too (`make test-tsan`).
    func testAScrapeWhileAWorkerRecordsSeesCumulativeBucketsAndASumCoveringItsCount() {
        let metrics = RelayMetrics()
        let handover = Handover()
        let writerDone = DispatchSemaphore(value: 0)
        let maximumRecords = 5_000_000
        let durations = Self.durations
        Thread {
            let route = metrics.worker(0).route("a")
            var count = 0
            while count < maximumRecords && !handover.stop.load(ordering: .acquiring) {
                route.countRequest(status: 200, seconds: durations[count % durations.count])
                count += 1
            }
            handover.recorded.store(count, ordering: .releasing)
            writerDone.signal()
        }.start()

        let name = "oauth_relay_request_duration_seconds"
        var scrapes = 0, scrapesWhileRecording = 0
        var previous: ScrapedHistogram?
        var counts = Set<Double>()
        while scrapesWhileRecording < 200 && scrapes < 100_000 {
            scrapes += 1
            guard let scraped = ScrapedHistogram(metrics.exposition(), name: name, labels: #"route="a",worker="0""#) else { continue }
            guard let count = scraped.count, let sum = scraped.sum, scraped.buckets.count == 16 else {
                return XCTFail("scrape \(scrapes): incomplete series \(scraped)")
            }
            XCTAssertEqual(scraped.buckets, scraped.buckets.sorted(), "scrape \(scrapes): buckets not cumulative")
            XCTAssertEqual(scraped.buckets.last, count, "scrape \(scrapes): +Inf differs from _count")
            XCTAssertGreaterThanOrEqual(sum, Self.sum(ofFirst: Int(count)), "scrape \(scrapes): _sum lacks a counted value")
            if let previous {
                for (now, before) in zip(scraped.buckets, previous.buckets) {
                    XCTAssertGreaterThanOrEqual(now, before, "scrape \(scrapes): a bucket went back")
                }
                XCTAssertGreaterThanOrEqual(sum, previous.sum!, "scrape \(scrapes): _sum went back")
            }
            if count > 0 && count < Double(maximumRecords) { scrapesWhileRecording += 1 }
            counts.insert(count)
            previous = scraped
        }
        handover.stop.store(true, ordering: .releasing)
        writerDone.wait()
        let recorded = handover.recorded.load(ordering: .acquiring)
        XCTAssertEqual(scrapesWhileRecording, 200, "the scrapes did not overlap the recording")
        XCTAssertGreaterThan(counts.count, 1, "every scrape saw the same count")

        // The writer stopped: everything it recorded is there, exactly.
        let final = ScrapedHistogram(metrics.exposition(), name: name, labels: #"route="a",worker="0""#)
        XCTAssertEqual(final?.count, Double(recorded))
        XCTAssertEqual(final?.sum, Self.sum(ofFirst: recorded))
    }

    /// The same guarantee at the histogram itself, with snapshots taken as fast as they go, so that
    /// a scrape lands between the writer's stores often: a writer storing the bucket before the sum
    /// (or a snapshot reading the sum first) is caught here.
    func testSnapshotsInATightLoopNeverCountAValueTheSumLacks() {
        let histogram = WorkerHistogram(bounds: RelayMetrics.durationBuckets)
        let handover = Handover()
        let writerDone = DispatchSemaphore(value: 0)
        let maximumRecords = 20_000_000
        let durations = Self.durations
        Thread {
            var count = 0
            while count < maximumRecords && !handover.stop.load(ordering: .acquiring) {
                histogram.record(durations[count % durations.count])
                count += 1
            }
            handover.recorded.store(count, ordering: .releasing)
            writerDone.signal()
        }.start()

        var snapshots = 0, snapshotsWhileRecording = 0, failures = 0
        while snapshotsWhileRecording < 200_000 && snapshots < 2_000_000 && failures < 5 {
            snapshots += 1
            let snapshot = histogram.snapshot()
            if snapshot.count > 0 && snapshot.count < maximumRecords { snapshotsWhileRecording += 1 }
            let expected = Self.sum(ofFirst: Int(snapshot.count))
            if snapshot.sum < expected || snapshot.cumulativeCounts != snapshot.cumulativeCounts.sorted() {
                failures += 1
                XCTFail("snapshot \(snapshots): \(snapshot.cumulativeCounts), sum \(snapshot.sum) < \(expected)")
            }
        }
        handover.stop.store(true, ordering: .releasing)
        writerDone.wait()
        XCTAssertEqual(snapshotsWhileRecording, 200_000, "the snapshots did not overlap the recording")
        let recorded = handover.recorded.load(ordering: .acquiring)
        XCTAssertEqual(histogram.snapshot().count, UInt64(recorded))
        XCTAssertEqual(histogram.snapshot().sum, Self.sum(ofFirst: recorded))
    }
}
