public import AttacheBase
public import AttacheCore
import Foundation

/// Totals over a whole manifest (every run of the batch), and this run's pace.
public struct BatchSummary: Sendable {
    /// Items recorded, by outcome and by error code.
    public var items = 0
    public var outcomes: [String: Int] = [:]
    public var codes: [String: Int] = [:]
    /// Bytes fetched and stored.
    public var bytesIn: Int64 = 0
    public var bytesOut: Int64 = 0
    /// Milliseconds per stage over every attachment.
    public var stages = StageTimings()
    /// This run: items finished, seconds, and items skipped as already done.
    public var run: BatchRunner.Progress?
    /// The edge warm-up after the run (`--warm`).
    public var warm: EdgeWarmup.Outcome?

    public init() {}

    /// Reads every record of the manifest at `path`.
    public init(manifest path: String, run: BatchRunner.Progress?) throws(AttacheError) {
        self.run = run
        try BatchManifest.scan(path) { record, _ in
            guard let record else { return }
            add(record)
        }
    }

    mutating func add(_ record: ManifestRecord) {
        items += 1
        outcomes[record.outcome, default: 0] += 1
        if let code = record.code { codes[code, default: 0] += 1 }
        bytesIn += record.bytesIn
        bytesOut += record.bytesOut
        stages.add(record.stages)
    }

    static let outcomeOrder = ["attached", "partial", "unchanged", "failed", "unreadable", "withheld"]

    /// The summary table printed at the end.
    public var table: String {
        var rows: [(String, String)] = [("outcome", "items")]
        for outcome in Self.outcomeOrder + outcomes.keys.filter({ !Self.outcomeOrder.contains($0) }).sorted()
        where outcomes[outcome] != nil {
            rows.append((outcome, "\(outcomes[outcome]!)"))
        }
        rows.append(("total", "\(items)"))
        if !codes.isEmpty {
            rows.append(("", ""))
            rows.append(("error code", "items"))
            for (code, count) in codes.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }) {
                rows.append((code, "\(count)"))
            }
        }
        let width = rows.map(\.0.count).max() ?? 0
        var text = rows.map {
            $0.0.isEmpty ? "" : $0.0.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.1
        }
        .joined(separator: "\n")
        text += "\n\nbytes fetched \(Self.bytes(bytesIn)), stored \(Self.bytes(bytesOut))"
        if let run {
            let seconds = (ContinuousClock.now - run.started).milliseconds / 1000
            text += String(
                format: "\nthis run: %d items in %.1f s, %.1f items/s (%d already done, skipped)", run.done, seconds,
                run.rate, run.skipped)
        }
        if let warm { text += "\n" + warm.summary }
        return text + "\n"
    }

    /// The summary as one JSON object.
    public var json: String {
        var line = JSONLine()
        line.add("items", items)
        line.addRaw("outcomes", Self.object(outcomes))
        line.addRaw("codes", Self.object(codes))
        line.add("bytes_in", Int(bytesIn))
        line.add("bytes_out", Int(bytesOut))
        line.add("stage_ms", object: stages.json)
        if let run {
            var runLine = JSONLine()
            runLine.add("total", run.total)
            runLine.add("skipped", run.skipped)
            runLine.add("done", run.done)
            runLine.add("failed", run.failed)
            runLine.add("seconds", ((ContinuousClock.now - run.started).milliseconds / 100).rounded() / 10)
            runLine.add("items_per_second", (run.rate * 10).rounded() / 10)
            runLine.add("peak_rss_mb", (Self.peakResidentMegabytes * 10).rounded() / 10)
            line.add("run", object: runLine)
        }
        if let warm { line.add("warm", object: warm.json) }
        return line.text
    }

    /// This process's peak resident set so far.
    static var peakResidentMegabytes: Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024
    }

    static func object(_ counts: [String: Int]) -> String {
        "{" + counts.sorted { $0.key < $1.key }.map { "\(JSONLine.quote($0.key)):\($0.value)" }.joined(separator: ",")
            + "}"
    }

    /// `1.2 MB`, `340 KB`, `12 B`.
    public static func bytes(_ count: Int64) -> String {
        let units: [(Double, String)] = [(1e9, "GB"), (1e6, "MB"), (1e3, "KB")]
        for (size, unit) in units where Double(count) >= size {
            return String(format: "%.1f %@", Double(count) / size, unit)
        }
        return "\(count) B"
    }
}

/// The progress line: a bar on a terminal, a plain line in a log.
public enum ProgressLine {
    /// `[#########...........]  912/2000  45.2 items/s  ETA 0:24  3 failed`, fitted to `width`.
    public static func bar(
        _ progress: BatchRunner.Progress, width: Int, now: ContinuousClock.Instant = .now
    ) -> String {
        let todo = max(0, progress.total - progress.skipped)
        let fraction = todo > 0 ? min(1, Double(progress.done) / Double(todo)) : 1
        let text = "  " + counts(progress, now: now)
        let barWidth = max(10, min(40, width - text.count - 3))
        let filled = Int((fraction * Double(barWidth)).rounded(.down))
        let line =
            "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: barWidth - filled) + "]"
            + text
        return String(line.prefix(max(1, width - 1)))
    }

    /// `batch: 912/2000 done, 45.2 items/s, ETA 0:24, 3 failed`.
    public static func log(_ progress: BatchRunner.Progress, now: ContinuousClock.Instant = .now) -> String {
        "batch: " + counts(progress, now: now).replacingOccurrences(of: "  ", with: ", ")
    }

    static func counts(_ progress: BatchRunner.Progress, now: ContinuousClock.Instant) -> String {
        let todo = max(0, progress.total - progress.skipped)
        let rate = progress.rate(at: now)
        let left = todo - progress.done
        let eta = rate > 0 && !progress.finished ? clock(Double(left) / rate) : "-"
        var text = "\(progress.done)/\(todo)" + String(format: "  %.1f items/s", rate) + "  ETA \(eta)"
        text += "  \(progress.failed) failed"
        if progress.skipped > 0 { text += "  \(progress.skipped) skipped" }
        return text
    }

    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        return h > 0 ? String(format: "%d:%02d:%02d", h, m, s) : String(format: "%d:%02d", m, s)
    }
}
