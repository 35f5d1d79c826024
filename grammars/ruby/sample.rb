# frozen_string_literal: true

# A small job queue written for lode's tags fixtures in the style of Sidekiq's
# lib/sidekiq/fetch.rb and lib/sidekiq/job_retry.rb (LGPL-3.0); no lines are copied.

require "json"
require "logger"
require_relative "queue/stats"

# Background job processing.
module Worker
  # Seconds to wait before the first retry.
  BASE_DELAY = 15
  RETRYABLE = [IOError, Timeout::Error].freeze

  # Raised when a job has used up its retries.
  class RetryExhausted < StandardError
    def initialize(job)
      super("retries exhausted for #{job.id}")
    end
  end

  # A unit of work and its arguments.
  class Job
    attr_accessor :id, :args
    attr_reader :attempts

    # Builds a job.
    #
    # @param id [String] the job id
    # @param args [Array] the arguments passed to #perform
    def initialize(id, args = [])
      @id = id
      @args = args
      @attempts = 0 # none yet
    end

    # Reads a job from its JSON form.
    # @return [Job]
    def self.from_json(text)
      hash = JSON.parse(text)
      new(hash.fetch("id"), hash["args"])
    end

    def to_json(*)
      JSON.generate({ "id" => id, "args" => args })
    end

    def retry!
      @attempts += 1
      raise RetryExhausted.new(self) if @attempts > Queue::MAX_RETRIES
    end
  end

  # A named FIFO of jobs.
  class Queue
    include Enumerable

    MAX_RETRIES = 25

    class << self
      # The queue every job lands in unless it names another.
      def default
        @default ||= new("default")
      end
    end

    attr_reader :name

    def initialize(name, logger: Logger.new($stderr))
      @name = name
      @jobs = []
      @logger = logger
      @stats = Stats.new(name)
    end

    # Adds a job at the back.
    def push(job)
      @jobs.push(job)
      @stats.record(:pushed)
      @logger.info("pushed #{job.id} to #{name}")
      self
    end

    # Takes the job at the front, or nil.
    def pop
      job = @jobs.shift
      @stats.record(:popped) if job
      job
    end

    def size = @jobs.size

    # Runs every job, retrying the ones that raise a retryable error.
    def drain(&block)
      while (job = pop)
        begin
          block.call(job)
        rescue *RETRYABLE => e
          log_failure(job, e)
          job.retry!
          # Back of the line, so other jobs get a turn.
          push(job)
        end
      end
    end

    private

    def log_failure(job, error)
      @logger.warn(format("job %s failed: %s", job.id, error.message))
    end
  end

  # Helpers mixed into classes that enqueue jobs.
  module Enqueue
    module_function

    def enqueue(queue, *args)
      job = Job.new(SecureRandom.hex(8), args)
      queue.push(job)
      job.id
    end

    def delay_for(attempts)
      BASE_DELAY * (2**attempts)
    end
  end

  def self.configure
    yield config
  end

  def self.config
    @config ||= { concurrency: 5, queues: [Queue.default] }
  end
end

# Runs queues on a timer; reopened from outside the module.
class Worker::Scheduler
  def initialize(queues)
    @queues = queues
  end

  def tick
    @queues.each { |queue| queue.drain { |job| perform(job) } }
  end
end

=begin
Usage from a script:
  Worker::Enqueue.enqueue(Worker::Queue.default, 1, 2)
=end
Worker.configure { |c| c[:concurrency] = 10 }
