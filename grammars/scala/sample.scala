/*
 * A rate limiter written for lode's tags fixtures in the style of Akka's
 * akka/pattern/CircuitBreaker.scala and akka/util/TokenBucket.scala (Apache-2.0); no lines are copied.
 */
package com.example.limits

import scala.concurrent.duration.FiniteDuration
import scala.collection.mutable
import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

/** What a limiter decided about one request. */
sealed trait Decision {
  def allowed: Boolean
}

/** The request may go ahead. */
case object Allowed extends Decision {
  val allowed = true
}

/** The request must wait `delayNanos` first. */
final case class Delayed(delayNanos: Long) extends Decision {
  def allowed: Boolean = false
}

/** A source of time, so tests can move it by hand. */
trait Clock {
  def nanoTime(): Long
}

object Clock {
  /** The system's monotonic clock. */
  val system: Clock = new Clock {
    def nanoTime(): Long = System.nanoTime()
  }
}

// Top-level definitions need Scala 3.
type Cost = Int

/**
 * A token bucket: `capacity` tokens, one added every `period`.
 *
 * @param capacity the most tokens the bucket holds
 */
class TokenBucket(val capacity: Long, period: FiniteDuration)(implicit clock: Clock) {
  private val tokens = new AtomicLong(capacity)
  private val lastRefill = new AtomicReference[Long](clock.nanoTime())
  var rejected: Int = 0

  /** Takes `cost` tokens if there are enough. */
  def tryAcquire(cost: Cost = 1): Decision = {
    refill()
    val available = tokens.get()
    if (available >= cost && tokens.compareAndSet(available, available - cost)) Allowed
    else {
      rejected += 1
      Delayed(period.toNanos * (cost - available))
    }
  }

  // Adds the tokens earned since the last refill.
  private def refill(): Unit = {
    val now = clock.nanoTime()
    // Whole tokens only: the remainder waits for the next refill.
    val earned = (now - lastRefill.get()) / period.toNanos
    if (earned > 0) {
      lastRefill.set(now)
      tokens.updateAndGet(current => math.min(capacity, current + earned))
    }
  }

  class Stats {
    def rejectedSoFar: Int = rejected
  }
}

object TokenBucket {
  final val DefaultCapacity = 100L

  def apply(period: FiniteDuration)(implicit clock: Clock): TokenBucket = {
    new TokenBucket(DefaultCapacity, period)
  }

  /** Buckets by key, made on first use. */
  class Registry(period: FiniteDuration) {
    private val buckets = mutable.Map.empty[String, TokenBucket]

    def bucketFor(key: String): TokenBucket =
      buckets.getOrElseUpdate(key, TokenBucket(period)(Clock.system))
  }
}

enum Priority(val weight: Int) {
  case Low extends Priority(1)
  case High extends Priority(10)
}

/** Heavier priorities sort first (a Scala 3 given instance). */
given priorityOrdering: Ordering[Priority] with {
  def compare(a: Priority, b: Priority): Int = b.weight.compare(a.weight)
}

given Ordering[Decision] = Ordering.by(_.allowed)

def describe(decision: Decision): String = decision match {
  case Allowed            => "allowed"
  case Delayed(nanos) => s"delayed by ${nanos}ns"
}
