# A rate limiter and its token bucket, as an OTP application module.
# Written for lode's fixtures in the style of Plug (lib/plug/conn.ex, Apache-2.0) and
# Elixir's own lib/elixir/lib/agent.ex (Apache-2.0); no lines copied.

defmodule RateLimit do
  @moduledoc """
  Limits how often a key may act, with one token bucket per key.
  """

  use GenServer
  require Logger
  alias RateLimit.{Bucket, Config}
  import Kernel, except: [to_string: 1]

  @default_rate 10
  @typedoc "A key that is limited: a user id, an IP address."
  @type key :: term()

  defmodule Config do
    @moduledoc "The limiter's settings."
    @enforce_keys [:rate]
    defstruct rate: 10, burst: 20, clock: &System.monotonic_time/1

    @doc "Reads the settings from the application environment."
    @spec from_env(atom()) :: t()
    def from_env(app) do
      env = Application.get_env(app, RateLimit, [])
      struct!(__MODULE__, env)
    end
  end

  defmodule Bucket do
    @moduledoc false
    defstruct tokens: 0, updated_at: 0

    # Refills the bucket for the time that passed since it was last updated.
    def refill(%__MODULE__{} = bucket, %Config{} = config, now) do
      elapsed = now - bucket.updated_at
      tokens = min(config.burst, bucket.tokens + elapsed * config.rate)
      %{bucket | tokens: tokens, updated_at: now}
    end

    def take(%__MODULE__{tokens: tokens} = bucket) when tokens >= 1 do
      {:ok, %{bucket | tokens: tokens - 1}}
    end

    def take(bucket), do: {:error, bucket}
  end

  defprotocol Keyed do
    @doc "The rate-limit key of a request-like value."
    def key(value)
  end

  defimpl Keyed, for: Map do
    def key(%{remote_ip: ip}), do: ip
    def key(map), do: Map.get(map, :user_id)
  end

  @doc """
  Defines a function that checks the limit before running its body.

      deflimited send_mail(to), do: Mailer.deliver(to)
  """
  defmacro deflimited(call, do: body) do
    {name, _, args} = call

    quote do
      def unquote(name)(unquote_splicing(args)) do
        case RateLimit.check(unquote(hd(args))) do
          :ok -> unquote(body)
          {:error, :rate_limited} = error -> error
        end
      end
    end
  end

  defmacrop log_denied(key) do
    quote do: Logger.warning("rate limited: #{inspect(unquote(key))}")
  end

  ## Client API

  @doc "Starts the limiter under a supervisor."
  @spec start_link(keyword()) :: GenServer.on_start()
  def start_link(opts \\ []) do
    config = Config.from_env(Keyword.get(opts, :app, :rate_limit))
    GenServer.start_link(__MODULE__, config, name: __MODULE__)
  end

  @doc """
  Takes one token for `key`. Returns `:ok`, or `{:error, :rate_limited}` when the bucket is
  empty.
  """
  @spec check(key()) :: :ok | {:error, :rate_limited}
  def check(key) do
    GenServer.call(__MODULE__, {:check, key})
  end

  ## Server callbacks

  @impl true
  def init(%Config{} = config) do
    {:ok, %{config: config, buckets: %{}}}
  end

  @impl true
  def handle_call({:check, key}, _from, state) do
    now = now(state.config)
    bucket =
      state.buckets
      |> Map.get(key, %Bucket{tokens: state.config.burst, updated_at: now})
      |> Bucket.refill(state.config, now)

    case Bucket.take(bucket) do
      {:ok, bucket} ->
        {:reply, :ok, put_bucket(state, key, bucket)}

      {:error, bucket} ->
        log_denied(key)
        {:reply, {:error, :rate_limited}, put_bucket(state, key, bucket)}
    end
  end

  defp put_bucket(state, key, bucket) do
    %{state | buckets: Map.put(state.buckets, key, bucket)}
  end

  # The clock is configurable so tests can move time.
  defp now(%Config{clock: clock}), do: clock.(:second)

  defguard is_rate(value) when is_integer(value) and value > 0

  @doc false
  def default_rate, do: @default_rate
end
