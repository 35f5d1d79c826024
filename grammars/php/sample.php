<?php

/**
 * A cache store written for lode's tags fixtures in the style of Laravel's
 * Illuminate/Cache/Repository.php and Illuminate/Cache/ArrayStore.php (MIT); no lines are copied.
 */

declare(strict_types=1);

namespace App\Cache;

use App\Cache\Events\KeyWritten;
use Psr\SimpleCache\CacheInterface as PsrCache;
use function App\Support\now;

const DEFAULT_TTL = 3600;

/**
 * A place that stores values by key.
 */
interface Store
{
    public const FOREVER = 0;

    /** Reads a value, or null when the key is missing. */
    public function get(string $key): mixed;

    public function put(string $key, mixed $value, int $seconds): bool;
}

/** Counting what a store does. */
trait RecordsHits
{
    protected int $hits = 0;

    protected function recordHit(): void
    {
        $this->hits++;
    }
}

enum Expiry: string
{
    case Never = 'never';
    case After = 'after';

    public function label(): string
    {
        return ucfirst($this->value);
    }
}

/**
 * An in-memory store, for tests and one request's life.
 */
final class ArrayStore implements Store, \Countable
{
    use RecordsHits;

    /** @var array<string, array{value: mixed, expiresAt: int}> */
    private array $storage = [];

    public function __construct(private readonly Clock $clock = new SystemClock())
    {
    }

    public function get(string $key): mixed
    {
        $item = $this->storage[$key] ?? null;
        // An expired item counts as a miss.
        if ($item === null || $this->expired($item)) {
            return null;
        }
        $this->recordHit();
        return $item['value'];
    }

    public function put(string $key, mixed $value, int $seconds): bool
    {
        $this->storage[$key] = [
            'value' => $value,
            'expiresAt' => $seconds === Store::FOREVER ? 0 : $this->clock->now() + $seconds,
        ];
        return true; # always stored
    }

    public function count(): int
    {
        return count($this->storage);
    }

    private function expired(array $item): bool
    {
        return $item['expiresAt'] !== 0 && $item['expiresAt'] <= $this->clock->now();
    }
}

abstract class Repository
{
    /**
     * Creates a repository over a store.
     *
     * @param Store $store where values live
     */
    public function __construct(protected Store $store)
    {
    }

    abstract protected function events(): ?Dispatcher;

    /**
     * Returns the cached value, or computes and stores it.
     */
    public function remember(string $key, int $ttl, \Closure $callback): mixed
    {
        $value = $this->store->get($key);
        if ($value !== null) {
            return $value;
        }
        $value = $callback();
        $this->store->put($key, $value, $ttl);
        $this->events()?->dispatch(new KeyWritten($key, $value, $ttl));
        return $value;
    }

    public static function forever(Store $store): static
    {
        return new static($store);
    }
}

// A free helper, as Laravel's helpers.php defines them.
function cache(string $key, mixed $default = null): mixed
{
    static $repository = null;
    $repository ??= Repository::forever(new ArrayStore());
    return $repository->remember($key, DEFAULT_TTL, fn () => $default);
}

namespace App\Cache\Events;

/** Fired after a value is written. */
class KeyWritten
{
    public function __construct(
        public string $key,
        public mixed $value,
        public int $ttl = \App\Cache\DEFAULT_TTL,
    ) {
    }
}
