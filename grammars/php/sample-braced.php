<?php

// An event dispatcher written for lode's tags fixtures in the style of Symfony's
// EventDispatcher/EventDispatcher.php (MIT), with braced namespace blocks; no lines are copied.

namespace App\Events {
    use Psr\EventDispatcher\StoppableEventInterface;

    /** Something that can be dispatched to listeners. */
    interface Event extends StoppableEventInterface
    {
    }

    #[\Attribute(\Attribute::TARGET_METHOD)]
    final class AsListener
    {
        public function __construct(public string $event, public int $priority = 0)
        {
        }
    }

    /**
     * Calls the listeners of an event, highest priority first.
     */
    class Dispatcher
    {
        private static ?Dispatcher $instance = null;

        /** @var array<string, array<int, callable[]>> */
        private array $listeners = [];

        public static function instance(): self
        {
            return self::$instance ??= new self();
        }

        public function listen(string $name, callable $listener, int $priority = 0): void
        {
            $this->listeners[$name][$priority][] = $listener;
            krsort($this->listeners[$name]);
        }

        /**
         * Dispatches `$event` to every listener until one stops it.
         */
        public function dispatch(Event $event, ?string $name = null): Event
        {
            $name ??= $event::class;
            foreach ($this->listeners[$name] ?? [] as $listeners) {
                foreach ($listeners as $listener) {
                    if ($event->isPropagationStopped()) {
                        return $event;
                    }
                    $listener($event, $name, $this);
                }
            }
            return $event;
        }
    }
}

namespace {
    use App\Events\Dispatcher;

    // Global helpers live in the unnamed namespace.
    function event(App\Events\Event $event): App\Events\Event
    {
        return Dispatcher::instance()->dispatch($event);
    }
}
