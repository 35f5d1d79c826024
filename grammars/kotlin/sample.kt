/*
 * A download queue written for lode's tags fixtures in the style of OkHttp's
 * okhttp3/Dispatcher.kt and okhttp3/internal/cache/DiskLruCache.kt (Apache-2.0); no lines are copied.
 */
package com.example.downloads

import java.util.ArrayDeque
import java.util.concurrent.ExecutorService
import kotlinx.coroutines.flow.Flow as KFlow

/** How many downloads run at once unless configured. */
const val DEFAULT_MAX_REQUESTS = 64

private val defaultTimeouts = Timeouts(connectMillis = 10_000, readMillis = 30_000)

/** Where a download stands. */
enum class State {
    QUEUED,
    RUNNING,
    DONE;

    fun isFinished(): Boolean = this == DONE
}

/**
 * A request for one file.
 *
 * @property url where to fetch it from
 */
data class Request(val url: String, val priority: Int = 0)

data class Timeouts(val connectMillis: Long, val readMillis: Long)

/** Listens to a download's progress. */
interface Listener {
    fun onStart(request: Request) {}

    fun onProgress(request: Request, bytes: Long)
}

/** What a dispatcher can be asked to do. */
sealed interface Command {
    object Cancel : Command

    data class Enqueue(val request: Request) : Command
}

typealias Callback = (Request, Result<ByteArray>) -> Unit

/**
 * Runs downloads on an executor, at most [maxRequests] at a time.
 */
class Dispatcher(
    private val executor: ExecutorService,
    var maxRequests: Int = DEFAULT_MAX_REQUESTS, /* at least 1 */
) {
    private val readyCalls = ArrayDeque<Request>()
    private val runningCalls = ArrayDeque<Request>()
    val listeners: MutableList<Listener> = mutableListOf()

    /** Counts calls as they finish. */
    inner class Stats {
        var finished = 0
            private set

        fun record() {
            finished++
        }
    }

    private val stats = Stats()

    constructor(executor: ExecutorService) : this(executor, DEFAULT_MAX_REQUESTS)

    init {
        require(maxRequests >= 1) { "maxRequests < 1: $maxRequests" }
    }

    /** Queues a request and starts it when a slot is free. */
    fun enqueue(request: Request, callback: Callback) {
        synchronized(this) {
            readyCalls.add(request)
        }
        listeners.forEach { it.onStart(request) }
        promoteAndExecute(callback)
    }

    fun handle(command: Command) = when (command) {
        is Command.Cancel -> cancelAll()
        is Command.Enqueue -> readyCalls.add(command.request)
    }

    private fun promoteAndExecute(callback: Callback): Boolean {
        val executable = mutableListOf<Request>()
        // Move as many calls as there are free slots.
        synchronized(this) {
            while (readyCalls.isNotEmpty() && runningCalls.size < maxRequests) {
                val next = readyCalls.poll() ?: break
                executable.add(next)
                runningCalls.add(next)
            }
        }
        for (request in executable) {
            executor.execute {
                callback(request, runCatching { fetch(request) })
                stats.record()
            }
        }
        return executable.isNotEmpty()
    }

    // Drops everything that has not started.
    fun cancelAll() {
        readyCalls.clear()
    }

    companion object {
        /** A dispatcher on a fixed pool. */
        fun fixed(threads: Int): Dispatcher =
            Dispatcher(java.util.concurrent.Executors.newFixedThreadPool(threads))
    }
}

/** Fetches a request's bytes; blocking. */
fun fetch(request: Request): ByteArray = request.url.encodeToByteArray()

fun Request.withPriority(priority: Int): Request = copy(priority = priority)

object Downloads {
    val shared: Dispatcher by lazy { Dispatcher.fixed(4) }
}
