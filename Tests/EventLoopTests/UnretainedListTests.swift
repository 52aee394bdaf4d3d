@testable import EventLoop
import XCTest

private final class Item {
    let number: Int
    init(_ number: Int) { self.number = number }
}

final class UnretainedListTests: XCTestCase {
    /// More elements than the first storage holds: the list grows and keeps them in order.
    func testKeepsElementsInOrderPastItsFirstCapacity() {
        let items = (0..<9).map(Item.init)
        var list = UnretainedList<Item>(capacity: 2)
        for item in items { list.append(item) }
        XCTAssertEqual(list.count, 9)
        for index in 0..<list.count {
            XCTAssertTrue(list[index].takeUnretainedValue() === items[index], "element \(index)")
        }
    }

    /// The batch lists streams without keeping them alive (their handles do).
    func testDoesNotRetainWhatItLists() {
        var item = Item(1)
        var list = UnretainedList<Item>()
        list.append(item)
        XCTAssertTrue(isKnownUniquelyReferenced(&item))
        XCTAssertEqual(list[0].takeUnretainedValue().number, 1)
    }

    /// Emptied after a flush, the list is used again for the next read callback.
    func testRemoveAllEmptiesTheListForReuse() {
        let first = Item(1), second = Item(2)
        var list = UnretainedList<Item>(capacity: 1)
        list.append(first)
        list.append(second)
        list.removeAll()
        XCTAssertTrue(list.isEmpty)
        list.append(second)
        XCTAssertEqual(list.count, 1)
        XCTAssertTrue(list[0].takeUnretainedValue() === second)
    }
}
