/// The `DeadlineTimer`s of one loop in a binary min-heap by the time each is scheduled for, behind
/// a single libuv timer set for the earliest. A connection's timer then costs a slot in this heap
/// rather than a `uv_timer_t` handle of its own (nginx and h2o keep their timeouts in one per-loop
/// structure the same way), and arming it is a comparison, not a system-level timer change.
///
/// The libuv timer exists only while the heap is not empty, so a loop whose deadlines are all
/// closed has no handle left open (rule 3 of EventLoop.swift; the tests' leak check).
final class DeadlineQueue {
    private unowned let loop: EventLoop
    /// Ordered by `scheduledAt`; each timer knows its index (`heapIndex`), so closing one removes
    /// it at once.
    private var heap: [DeadlineTimer] = []
    private var timer: LoopTimer?
    /// When the libuv timer is set to fire; nil when it is not running.
    private var timerDue: UInt64?

    init(loop: EventLoop) {
        self.loop = loop
    }

    var count: Int { heap.count }

    /// Schedules `deadlineTimer` for `due` (loop milliseconds), in the heap or moved within it.
    func schedule(_ deadlineTimer: DeadlineTimer, at due: UInt64) {
        let index = deadlineTimer.heapIndex
        if index < 0 {
            deadlineTimer.scheduledAt = due
            deadlineTimer.heapIndex = heap.count
            heap.append(deadlineTimer)
            siftUp(heap.count - 1)
        } else {
            let earlier = due < deadlineTimer.scheduledAt
            deadlineTimer.scheduledAt = due
            if earlier { siftUp(index) } else { siftDown(index) }
        }
        startTimerIfSooner(than: heap[0].scheduledAt)
    }

    /// Takes `deadlineTimer` out of the heap (it was closed).
    func remove(_ deadlineTimer: DeadlineTimer) {
        let index = deadlineTimer.heapIndex
        guard index >= 0 else { return }
        removeEntry(at: index)
        if heap.isEmpty { closeTimer() }
    }

    private func removeEntry(at index: Int) {
        let removed = heap[index]
        removed.heapIndex = -1
        let last = heap.removeLast()
        guard index < heap.count else { return }
        heap[index] = last
        last.heapIndex = index
        siftDown(index)
        siftUp(index)
    }

    // MARK: The libuv timer

    private func startTimerIfSooner(than due: UInt64) {
        if let timerDue, timerDue <= due { return }
        if timer == nil { timer = LoopTimer(loop: loop) { [unowned self] in self.timerFired() } }
        timerDue = due
        timer?.start(afterMilliseconds: due - min(due, loop.nowMilliseconds))
    }

    /// Runs every timer due by now, earliest first. A timer's callback may arm, disarm or close
    /// any timer of this loop, this one included: the heap is read afresh after each.
    private func timerFired() {
        timerDue = nil
        let now = loop.nowMilliseconds
        while let first = heap.first, first.scheduledAt <= now {
            removeEntry(at: 0)
            first.scheduledTimeCame()
        }
        if let first = heap.first {
            startTimerIfSooner(than: first.scheduledAt)
        } else {
            closeTimer()
        }
    }

    private func closeTimer() {
        timer?.close()
        timer = nil
        timerDue = nil
    }

    // MARK: The heap

    private func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].scheduledAt < heap[parent].scheduledAt else { return }
            swapEntries(child, parent)
            child = parent
        }
    }

    private func siftDown(_ start: Int) {
        var parent = start
        while true {
            var smallest = parent
            let left = 2 * parent + 1, right = left + 1
            if left < heap.count && heap[left].scheduledAt < heap[smallest].scheduledAt { smallest = left }
            if right < heap.count && heap[right].scheduledAt < heap[smallest].scheduledAt { smallest = right }
            guard smallest != parent else { return }
            swapEntries(parent, smallest)
            parent = smallest
        }
    }

    private func swapEntries(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        heap[a].heapIndex = a
        heap[b].heapIndex = b
    }
}
