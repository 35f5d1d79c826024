// Written for lode's tags fixtures in the style of a small .NET job-queue
// library (the shape of Hangfire's BackgroundJob API, LGPL-3.0); no code is copied.
using System;
using System.Collections.Generic;
using System.Threading.Tasks;
using Json = System.Text.Json.JsonSerializer;

namespace Example.Jobs;

/// <summary>
/// What a queued job is doing.
/// </summary>
public enum JobState
{
    /// <summary>Waiting in the queue.</summary>
    Enqueued,
    Processing,
    Succeeded,
    Failed,
}

/// <summary>Something that runs a job.</summary>
public interface IJobRunner
{
    /// <summary>Runs <paramref name="job"/> and reports whether it succeeded.</summary>
    Task<bool> RunAsync(Job job);

    string Name { get; }
}

/// <summary>A unit of work and its arguments.</summary>
/// <param name="Id">The job's identifier.</param>
/// <param name="Method">The method to invoke.</param>
public record Job(Guid Id, string Method, IReadOnlyList<object> Args)
{
    public static Job Create(string method, params object[] args) =>
        new Job(Guid.NewGuid(), method, args);

    public string ToJson() => Json.Serialize(this);
}

/// <summary>A point in time the scheduler can compare cheaply.</summary>
public readonly struct Tick : IComparable<Tick>
{
    public const long TicksPerSecond = 10_000_000;

    public Tick(long value) => Value = value;

    public long Value { get; }

    public int CompareTo(Tick other) => Value.CompareTo(other.Value);
}

/// <summary>
/// An in-memory queue of jobs, processed one at a time.
/// </summary>
public sealed class JobQueue : IDisposable
{
    private readonly Queue<Job> _pending = new();
    private readonly Dictionary<Guid, JobState> _states = new();
    private readonly IJobRunner _runner;
    private bool _disposed;

    /// <summary>Raised after a job leaves the queue.</summary>
    public event EventHandler<JobState>? Completed;

    public JobQueue(IJobRunner runner)
    {
        _runner = runner ?? throw new ArgumentNullException(nameof(runner));
    }

    /// <summary>How many jobs wait.</summary>
    public int Count => _pending.Count;

    public JobState this[Guid id] => _states[id];

    /// <summary>Adds a job and returns its identifier.</summary>
    public Guid Enqueue(string method, params object[] args)
    {
        ThrowIfDisposed();
        var job = Job.Create(method, args);
        _pending.Enqueue(job);
        _states[job.Id] = JobState.Enqueued;
        return job.Id;
    }

    /// <summary>Runs every waiting job in order.</summary>
    public async Task DrainAsync()
    {
        while (_pending.TryDequeue(out var job))
        {
            _states[job.Id] = JobState.Processing;
            // A runner that throws fails the job, not the queue.
            bool ok;
            try
            {
                ok = await _runner.RunAsync(job);
            }
            catch (Exception)
            {
                ok = false;
            }
            var state = ok ? JobState.Succeeded : JobState.Failed;
            _states[job.Id] = state;
            Completed?.Invoke(this, state);
        }
    }

    private void ThrowIfDisposed()
    {
        if (_disposed)
        {
            throw new ObjectDisposedException(nameof(JobQueue));
        }
    }

    public void Dispose() => _disposed = true;

    /// <summary>Counts of jobs per state.</summary>
    public class Summary
    {
        public int Succeeded { get; set; }
        public int Failed { get; set; }

        public override string ToString() => $"{Succeeded} ok, {Failed} failed";
    }

    public delegate void JobCallback(Job job, JobState state);
}

/* Extension helpers kept apart from the queue itself. */
public static class JobQueueExtensions
{
    public static Guid Enqueue<T>(this JobQueue queue, string method) where T : IJobRunner =>
        queue.Enqueue($"{typeof(T).Name}.{method}");
}
