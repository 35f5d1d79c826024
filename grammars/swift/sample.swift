// An image cache written for lode's tags fixtures in the style of Kingfisher's
// Sources/Cache/MemoryStorage.swift and Sources/Cache/ImageCache.swift (MIT); no lines are copied.

import Foundation
import UIKit

/// How long a cached value stays valid.
public enum StorageExpiration {
    case never
    case seconds(TimeInterval)
    case expired

    /// The date this expiration ends, counted from `now`.
    func estimatedExpiration(since now: Date) -> Date {
        switch self {
        case .never: return .distantFuture
        case .seconds(let seconds): return now.addingTimeInterval(seconds)
        case .expired: return .distantPast
        }
    }
}

/// Something that can be stored in a cache.
public protocol CacheCostCalculable {
    /// The cost of keeping the value in memory.
    var cacheCost: Int { get }

    func prepareForCache()
}

/// A stored value and when it stops being valid.
struct StorageObject<T> {
    let value: T
    var expiration: Date

    mutating func extendExpiration(by seconds: TimeInterval) {
        expiration = Date().addingTimeInterval(seconds)
    }
}

let defaultCostLimit = 1024 * 1024 * 100

/// Keeps values in memory, evicting by cost.
public final class MemoryStorage<T: CacheCostCalculable> {
    /// Settings for a storage.
    public struct Config {
        public var totalCostLimit: Int
        public var countLimit: Int = .max

        public init(totalCostLimit: Int = defaultCostLimit) {
            self.totalCostLimit = totalCostLimit
        }
    }

    static var shared: MemoryStorage<T>? = nil

    private let storage = NSCache<NSString, Box>()
    private let lock = NSLock()
    private var keys = Set<String>()
    public var config: Config {
        didSet { storage.totalCostLimit = config.totalCostLimit }
    }

    /// A reference wrapper, as `NSCache` holds objects only.
    final class Box {
        let object: StorageObject<T>

        init(_ object: StorageObject<T>) {
            self.object = object
        }
    }

    public init(config: Config) {
        self.config = config
        storage.totalCostLimit = config.totalCostLimit
    }

    deinit {
        removeAll()
    }

    /// Stores `value` under `key`.
    public func store(value: T, forKey key: String, expiration: StorageExpiration = .never) {
        lock.lock()
        defer { lock.unlock() }
        value.prepareForCache()
        let date = expiration.estimatedExpiration(since: Date())
        let box = Box(StorageObject(value: value, expiration: date))
        storage.setObject(box, forKey: key as NSString, cost: value.cacheCost)
        keys.insert(key) // remembered for removeAll
    }

    public func value(forKey key: String) -> T? {
        guard let box = storage.object(forKey: key as NSString) else { return nil }
        if box.object.expiration < Date() {
            return nil
        }
        return box.object.value
    }

    func removeAll() {
        lock.lock()
        defer { lock.unlock() }
        storage.removeAllObjects()
        keys.removeAll()
    }
}

// MARK: - Conveniences

extension MemoryStorage: CustomStringConvertible {
    public var description: String {
        "MemoryStorage(\(keys.count) keys)"
    }

    /// Whether a value is cached and still valid.
    public func isCached(forKey key: String) -> Bool {
        value(forKey: key) != nil
    }

    /// The cached value for `key`, as `storage["avatar"]`.
    public subscript(key: String) -> T? {
        value(forKey: key)
    }
}

extension UIImage: CacheCostCalculable {
    public var cacheCost: Int {
        Int(size.height * size.width * scale * scale)
    }

    public func prepareForCache() {}
}

typealias ImageStorage = MemoryStorage<UIImage>

/// Makes the storage most callers share.
func makeDefaultStorage() -> ImageStorage {
    /* One hundred megabytes, as the shared cache uses. */
    let config = ImageStorage.Config(totalCostLimit: defaultCostLimit)
    return ImageStorage(config: config)
}

actor DiskWriter {
    private var pending: [String: Data] = [:]

    func write(_ data: Data, to name: String) {
        pending[name] = data
    }
}
