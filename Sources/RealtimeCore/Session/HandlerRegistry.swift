/// Every handler and observer of one session, keyed by ``HandlerID``.
///
/// Registration and removal are synchronous and safe from any thread. Dispatch takes a snapshot of the
/// matching handlers under the lock (removing `once` handlers in the same critical section, so a `once`
/// handler runs at most once even when two events race), then calls them outside the lock in
/// registration order. Removing a handler while an event is being dispatched takes effect for the next
/// event.
///
/// Events mostly repeat a few (channel, name) pairs, so dispatch remembers the sorted matches of the last
/// few pairs it looked up and finds them by comparing names, which is cheaper than hashing them into the
/// key table; any change to the handlers forgets them. Other pairs (events spread over many channels) cost
/// one lookup of their exact key, and one more per kind of wildcard handler the session has
/// (channel-wide, session-wide for a name, or for everything).
package final class HandlerRegistry: Sendable {
    /// A handler for received events.
    package typealias EventHandler = @Sendable (RealtimeEvent) -> Void
    /// An observer of connection state transitions: `(old, new)`.
    package typealias StateHandler = @Sendable (ConnectionState, ConnectionState) -> Void
    /// An observer of errors that did not necessarily end the session.
    package typealias ErrorHandler = @Sendable (RealtimeError) -> Void
    /// An observer of channel subscription changes.
    package typealias LifecycleHandler = @Sendable (ChannelLifecycleEvent) -> Void
    /// An adapter's tap: sees events and transitions as the engine handles them, and returns what to run on
    /// the delivery target in their place (see `RealtimeSession.addTap(channel:_:)`).
    package typealias Tap = @Sendable (SessionTapInput) -> (@Sendable () -> Void)?

    private struct Key: Hashable {
        var channel: ChannelID?
        var event: String?

        // Written out: the synthesized ones copy the optional channel, a retain and a release per field,
        // on every lookup.
        static func == (lhs: Key, rhs: Key) -> Bool {
            guard lhs.event == rhs.event else { return false }
            guard let left = lhs.channel else { return rhs.channel == nil }
            guard let right = rhs.channel else { return false }
            return left == right
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(event)
            if let channel {
                hasher.combine(true)
                channel.hash(into: &hasher)
            } else {
                hasher.combine(false)
            }
        }
    }

    /// One handler: 40 bytes. Its key is that of the list holding it.
    private struct Entry {
        let id: HandlerID
        let handler: EventHandler
        /// The registration sequence in the high bits, `once` and `persistent` in the two low ones: sorting
        /// by it sorts by registration.
        let order: UInt64

        init(id: HandlerID, sequence: UInt64, once: Bool, persistent: Bool, handler: @escaping EventHandler) {
            self.id = id
            self.handler = handler
            order = sequence << 2 | (once ? 1 : 0) | (persistent ? 2 : 0)
        }

        var once: Bool { order & 1 != 0 }
        /// Kept by the bulk removals; only `remove(id:)` removes it (see `add(…persistent:…)`).
        var persistent: Bool { order & 2 != 0 }
    }

    /// The handlers of one key, in registration order.
    private struct List {
        var key: Key
        var entries: [Entry] {
            didSet { hasOnce = entries.contains(where: \.once) }
        }
        /// Whether any entry is `once`: kept on change, so that dispatch need not look.
        private(set) var hasOnce = false

        init(key: Key, entries: [Entry]) {
            self.key = key
            self.entries = entries
            hasOnce = entries.contains(where: \.once)
        }
    }

    /// The matches of one (channel, event name) pair, in registration order, none of them `once`.
    private struct Route {
        var channel: ChannelID?
        var event: String
        var entries: [Entry]
    }

    /// How many (channel, event name) pairs dispatch remembers: a linear scan of this many beats a hash.
    package static let routeCacheSize = 4

    /// Each handler costs its entry and a 20-byte bucket in `slotOfHandler`; a key is stored once, in its
    /// list, however many handlers share it.
    private struct Storage {
        /// The lists by slot; a freed slot (in `freeSlots`) has no entries and waits for reuse.
        var lists: [List] = []
        var freeSlots: [UInt32] = []
        var slotOfKey: [Key: UInt32] = [:]
        var slotOfHandler: [HandlerID: UInt32] = [:]
        /// Remembered lookups, most recently added last; emptied by every change to the lists.
        var routes: [Route] = []
        /// When a missed lookup's route replaces a remembered one.
        var admission = RouteAdmission()
        var stateObservers: [(id: HandlerID, persistent: Bool, handler: StateHandler)] = []
        var errorObservers: [(id: HandlerID, handler: ErrorHandler)] = []
        var lifecycleObservers: [(id: HandlerID, channel: ChannelID?, handler: LifecycleHandler)] = []
        /// Adapters' taps; like persistent handlers, only `remove(_:)` removes them.
        var taps: [(id: HandlerID, channel: ChannelID?, tap: Tap)] = []
        var nextSequence: UInt64 = 0
        /// How many keys of each wildcard kind `slotOfKey` holds: dispatch looks up no key of a kind with none.
        var channelWideKeys = 0
        var sessionEventKeys = 0
        var sessionWideKeys = 0

        var handlerCount: Int { slotOfHandler.count }

        mutating func add(_ entry: Entry, under key: Key) {
            routes.removeAll(keepingCapacity: true)
            let slot: UInt32
            if let known = slotOfKey[key] {
                slot = known
            } else {
                if let free = freeSlots.popLast() {
                    slot = free
                    lists[Int(slot)].key = key
                } else {
                    slot = UInt32(lists.count)
                    lists.append(List(key: key, entries: []))
                }
                slotOfKey[key] = slot
                countWildcard(key, by: 1)
            }
            lists[Int(slot)].entries.append(entry)
            slotOfHandler[entry.id] = slot
        }

        mutating func remove(_ id: HandlerID) -> Bool {
            if let slot = slotOfHandler.removeValue(forKey: id) {
                slotOfHandler.releaseRoomIfSparse()
                routes.removeAll(keepingCapacity: true)
                lists[Int(slot)].entries.removeAll { $0.id == id }
                freeIfEmpty(slot)
                return true
            }
            if let position = stateObservers.firstIndex(where: { $0.id == id }) {
                stateObservers.remove(at: position)
                return true
            }
            if let position = errorObservers.firstIndex(where: { $0.id == id }) {
                errorObservers.remove(at: position)
                return true
            }
            if let position = lifecycleObservers.firstIndex(where: { $0.id == id }) {
                lifecycleObservers.remove(at: position)
                return true
            }
            if let position = taps.firstIndex(where: { $0.id == id }) {
                taps.remove(at: position)
                return true
            }
            return false
        }

        private mutating func countWildcard(_ key: Key, by delta: Int) {
            switch (key.channel, key.event) {
            case (_?, _?): return
            case (_?, nil): channelWideKeys += delta
            case (nil, _?): sessionEventKeys += delta
            case (nil, nil): sessionWideKeys += delta
            }
        }

        /// Frees the slot of a list left without handlers.
        private mutating func freeIfEmpty(_ slot: UInt32) {
            guard lists[Int(slot)].entries.isEmpty else { return }
            slotOfKey[lists[Int(slot)].key] = nil
            countWildcard(lists[Int(slot)].key, by: -1)
            if slotOfKey.isEmpty {
                lists = []
                freeSlots = []
                slotOfKey = [:]
            } else {
                lists[Int(slot)] = List(key: Key(), entries: [])
                freeSlots.append(slot)
            }
        }

        /// The slots of the keys `matches` picks.
        func slots(where matches: (Key) -> Bool) -> [UInt32] {
            slotOfKey.compactMap { matches($0.key) ? $0.value : nil }
        }

        /// Removes the non-persistent entries of the list in `slot`.
        mutating func removeAppEntries(_ slot: UInt32) {
            let entries = lists[Int(slot)].entries
            guard entries.contains(where: { !$0.persistent }) else { return }
            routes.removeAll(keepingCapacity: true)
            for entry in entries where !entry.persistent { slotOfHandler[entry.id] = nil }
            slotOfHandler.releaseRoomIfSparse()
            lists[Int(slot)].entries = entries.filter(\.persistent)
            freeIfEmpty(slot)
        }

        /// Appends the entries under `key` to `matches`, taking the `once` ones out of the list (and then
        /// setting `tookOnce`). Returns whether `key` has a list (a list always has entries).
        @discardableResult
        mutating func take(_ key: Key, into matches: inout [Entry], tookOnce: inout Bool) -> Bool {
            guard let slot = slotOfKey[key] else { return false }
            let entries = lists[Int(slot)].entries
            if matches.isEmpty {
                matches = entries  // the list's own storage, shared until either changes
            } else {
                matches.append(contentsOf: entries)
            }
            if lists[Int(slot)].hasOnce {
                tookOnce = true
                routes.removeAll(keepingCapacity: true)
                for entry in entries where entry.once { slotOfHandler[entry.id] = nil }
                lists[Int(slot)].entries = entries.filter { !$0.once }
                freeIfEmpty(slot)
            }
            return true
        }
    }

    private let storage = Locked(Storage())

    package init() {}

    /// Adds an event handler. `channel == nil` matches every channel (and connection-level events);
    /// `event == nil` matches every event name. A `persistent` handler survives `remove(event:channel:)`,
    /// `removeAll(channel:)` and `removeEverything()`: adapters keep their own bookkeeping (a presence
    /// roster) that way, so an app clearing its handlers does not silently stop it.
    @discardableResult
    package func add(channel: ChannelID?, event: String?, once: Bool = false, persistent: Bool = false,
                    id chosen: HandlerID? = nil, _ handler: @escaping EventHandler) -> HandlerID {
        let id = chosen ?? HandlerID()
        let key = Key(channel: channel, event: event)
        storage.withLock { storage in
            // A chosen id registered again replaces its earlier registration; a fresh one has none.
            if chosen != nil { _ = storage.remove(id) }
            let entry = Entry(id: id, sequence: storage.nextSequence, once: once, persistent: persistent,
                              handler: handler)
            storage.nextSequence += 1
            storage.add(entry, under: key)
        }
        return id
    }

    /// Adds a connection state observer; a `persistent` one survives `removeEverything()`.
    @discardableResult
    package func addStateObserver(persistent: Bool = false, _ handler: @escaping StateHandler) -> HandlerID {
        let id = HandlerID()
        storage.withLock { $0.stateObservers.append((id, persistent, handler)) }
        return id
    }

    /// Adds an error observer.
    @discardableResult
    package func addErrorObserver(id chosen: HandlerID? = nil, _ handler: @escaping ErrorHandler) -> HandlerID {
        let id = chosen ?? HandlerID()
        storage.withLock { storage in
            if chosen != nil { _ = storage.remove(id) }
            storage.errorObservers.append((id, handler))
        }
        return id
    }

    /// Adds an observer of subscription changes of `channel` (`nil`: every channel).
    @discardableResult
    package func addLifecycleObserver(channel: ChannelID?, _ handler: @escaping LifecycleHandler) -> HandlerID {
        let id = HandlerID()
        storage.withLock { $0.lifecycleObservers.append((id, channel, handler)) }
        return id
    }

    /// Adds an adapter's tap of `channel` (`nil`: every channel); it survives `removeEverything()`.
    @discardableResult
    package func addTap(channel: ChannelID?, _ tap: @escaping Tap) -> HandlerID {
        let id = HandlerID()
        storage.withLock { $0.taps.append((id, channel, tap)) }
        return id
    }

    /// Removes the handler or observer with `id`. Returns `false` if there was none.
    @discardableResult
    package func remove(id: HandlerID) -> Bool {
        storage.withLock { $0.remove(id) }
    }

    /// Removes every handler registered for exactly `event` in `channel` (`nil`: the session scope),
    /// except persistent ones.
    package func remove(event: String, channel: ChannelID?) {
        storage.withLock { storage in
            if let slot = storage.slotOfKey[Key(channel: channel, event: event)] { storage.removeAppEntries(slot) }
        }
    }

    /// Removes every event handler registered in `channel` (`nil`: the session scope; observers stay),
    /// except persistent ones.
    package func removeAll(channel: ChannelID?) {
        storage.withLock { storage in
            for slot in storage.slots(where: { $0.channel == channel }) { storage.removeAppEntries(slot) }
        }
    }

    /// Removes every handler and observer, except persistent ones.
    package func removeEverything() {
        storage.withLock { storage in
            for slot in storage.slots(where: { _ in true }) { storage.removeAppEntries(slot) }
            storage.stateObservers.removeAll { !$0.persistent }
            storage.errorObservers = []
        }
    }

    /// How many handlers and observers are registered.
    package var count: Int {
        storage.withLock {
            $0.handlerCount + $0.stateObservers.count + $0.errorObservers.count + $0.lifecycleObservers.count
                + $0.taps.count
        }
    }

    /// Calls every handler matching `event`, in registration order, outside the lock.
    package func dispatch(_ event: RealtimeEvent) {
        // Read once: each read of an event's channel copies it, with a retain and a release per field.
        let name = event.name
        let eventChannel = event.channel
        let matches = storage.withLock { storage -> [Entry] in
            // Matched in place: iterating would copy each route, with a retain and release per field.
            if let hit = storage.routes.firstIndex(where: { $0.event == name && $0.channel == eventChannel }) {
                storage.admission.noteHit()
                return storage.routes[hit].entries
            }
            var matches: [Entry] = []
            var listsMatched = 0  // each list is in registration order already
            var tookOnce = false
            func take(_ key: Key) {
                if storage.take(key, into: &matches, tookOnce: &tookOnce) { listsMatched += 1 }
            }
            if let channel = eventChannel {
                take(Key(channel: channel, event: name))
                if storage.channelWideKeys > 0 { take(Key(channel: channel, event: nil)) }
            }
            if storage.sessionEventKeys > 0 { take(Key(channel: nil, event: name)) }
            if storage.sessionWideKeys > 0 { take(Key(channel: nil, event: nil)) }
            if listsMatched > 1 { matches.sort { $0.order < $1.order } }
            // A `once` match changed the lists (which emptied the cache); the next lookup differs.
            if !tookOnce, storage.admission.admitsMiss(cacheFull: storage.routes.count == Self.routeCacheSize) {
                if storage.routes.count == Self.routeCacheSize { storage.routes.removeFirst() }
                storage.routes.append(Route(channel: eventChannel, event: name, entries: matches))
            }
            return matches
        }
        for entry in matches { entry.handler(event) }
    }

    /// Whether dispatch remembers the matches of (`channel`, `event`): for tests of the route policy.
    package func remembersRoute(channel: ChannelID?, event: String) -> Bool {
        storage.withLock { $0.routes.contains { $0.channel == channel && $0.event == event } }
    }

    /// Shows `deliveries` to the taps, in order, outside the lock, and puts what each tap returns just before
    /// the delivery it saw. Leaves `deliveries` as it is (no copy) while no tap returns anything: a roster on
    /// one channel costs a busy other channel nothing but the look.
    func tap(_ deliveries: inout [Delivery]) {
        let taps = storage.withLock { $0.taps }
        guard !taps.isEmpty else { return }
        var tapped: [Delivery]?  // made at the first follow-up
        for index in deliveries.indices {
            let delivery = deliveries[index]
            let input: SessionTapInput
            switch delivery {
            case .event(let event, _, _): input = .event(event)
            case .state(let old, let new): input = .state(old, new)
            case .error, .lifecycle, .followUp:
                tapped?.append(delivery)
                continue
            }
            for entry in taps {
                if case .event(let event) = input, let channel = entry.channel, channel != event.channel { continue }
                guard let followUp = entry.tap(input) else { continue }
                if tapped == nil { tapped = Array(deliveries[..<index]) }
                tapped?.append(.followUp(followUp))
            }
            tapped?.append(delivery)
        }
        if let tapped { deliveries = tapped }
    }

    /// Calls every state observer with a transition.
    package func dispatchState(from old: ConnectionState, to new: ConnectionState) {
        let observers = storage.withLock { $0.stateObservers }
        for observer in observers { observer.handler(old, new) }
    }

    /// Calls every error observer.
    package func dispatchError(_ error: RealtimeError) {
        let observers = storage.withLock { $0.errorObservers }
        for observer in observers { observer.handler(error) }
    }

    /// Calls every lifecycle observer of the event's channel and of every channel, in registration order.
    package func dispatchLifecycle(_ event: ChannelLifecycleEvent) {
        let observers = storage.withLock { $0.lifecycleObservers }
        for observer in observers where observer.channel == nil || observer.channel == event.channel {
            observer.handler(event)
        }
    }
}
