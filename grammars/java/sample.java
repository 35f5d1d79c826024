/*
 * Written for lode's tags fixtures in the style of a small LRU cache library
 * (the shape of Apache Commons Collections' LRUMap); no code is copied.
 */
package org.example.cache;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import static java.util.Objects.requireNonNull;

/**
 * A bounded cache that evicts the least recently used entry.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public class LruCache<K, V> implements Cache<K, V> {

    /** The capacity used when none is given. */
    public static final int DEFAULT_CAPACITY = 16;

    private final Map<K, Node<K, V>> index = new HashMap<>();
    private final int capacity;
    private Node<K, V> head;
    private Node<K, V> tail;
    private Stats stats = new Stats(0, 0);

    /** Creates a cache holding {@link #DEFAULT_CAPACITY} entries. */
    public LruCache() {
        this(DEFAULT_CAPACITY);
    }

    /**
     * Creates a cache holding at most {@code capacity} entries.
     *
     * @param capacity the maximum number of entries, at least one
     */
    public LruCache(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity < 1: " + capacity);
        }
        this.capacity = capacity;
    }

    @Override
    public V get(K key) {
        Node<K, V> node = index.get(requireNonNull(key));
        if (node == null) {
            stats = stats.withMiss();
            return null;
        }
        moveToFront(node);
        stats = stats.withHit();
        return node.value;
    }

    @Override
    public V computeIfAbsent(K key, Function<? super K, ? extends V> loader) {
        V cached = get(key);
        if (cached != null) {
            return cached;
        }
        V loaded = loader.apply(key);
        put(key, loaded);
        return loaded;
    }

    @Override
    public void put(K key, V value) {
        Node<K, V> node = index.get(key);
        if (node != null) {
            node.value = value;
            moveToFront(node);
            return;
        }
        node = new Node<>(key, value);
        index.put(key, node);
        pushFront(node);
        if (index.size() > capacity) {
            evict(EvictionCause.SIZE);
        }
    }

    /** How often lookups hit so far. */
    public Stats stats() {
        return stats;
    }

    private void moveToFront(Node<K, V> node) {
        unlink(node);
        pushFront(node);
    }

    private void pushFront(Node<K, V> node) {
        node.next = head;
        if (head != null) {
            head.prev = node;
        }
        head = node;
        if (tail == null) {
            tail = node;
        }
    }

    private void unlink(Node<K, V> node) {
        // Splice the node out of the list; the ends move when it was one of them.
        if (node.prev != null) {
            node.prev.next = node.next;
        } else {
            head = node.next;
        }
        if (node.next != null) {
            node.next.prev = node.prev;
        } else {
            tail = node.prev;
        }
        node.prev = node.next = null;
    }

    private void evict(EvictionCause cause) {
        Node<K, V> victim = tail;
        unlink(victim);
        index.remove(victim.key);
        Objects.requireNonNull(cause, "cause");
    }

    /** One entry of the recency list. */
    private static final class Node<K, V> {
        final K key;
        V value;
        Node<K, V> prev;
        Node<K, V> next;

        Node(K key, V value) {
            this.key = key;
            this.value = value;
        }
    }

    /** Why an entry left the cache. */
    public enum EvictionCause {
        /** The cache was full. */
        SIZE,
        EXPLICIT;

        /** Whether the entry was removed by the cache itself. */
        public boolean wasEvicted() {
            return this == SIZE;
        }
    }

    /**
     * Hit and miss counts, immutable.
     */
    public record Stats(long hits, long misses) {
        public Stats {
            if (hits < 0 || misses < 0) {
                throw new IllegalArgumentException("negative count");
            }
        }

        Stats withHit() {
            return new Stats(hits + 1, misses);
        }

        Stats withMiss() {
            return new Stats(hits, misses + 1);
        }

        public double hitRate() {
            long total = hits + misses;
            return total == 0 ? 0.0 : (double) hits / total;
        }
    }
}

/** What every cache offers. */
interface Cache<K, V> {
    int UNBOUNDED = -1;

    V get(K key);

    V computeIfAbsent(K key, Function<? super K, ? extends V> loader);

    void put(K key, V value);

    /** Drops nothing by default. */
    default void cleanUp() {}
}

/** Marks a cache whose entries may be read from many threads. */
@interface ThreadSafe {
    String value() default "";
}
