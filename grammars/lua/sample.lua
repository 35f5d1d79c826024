--- A small LRU cache and a job queue, as a Lua module.
-- Written for lode's fixtures in the style of Penlight (pl/List.lua, pl/class.lua; MIT) and
-- plenary.nvim (lua/plenary/job.lua; MIT); no lines copied.
-- @module cache

local utils = require("pl.utils")
local json = require "cjson"
local log = require("plenary.log").new({ plugin = "cache" })

local M = {}

--- The default number of entries a cache holds.
M.DEFAULT_CAPACITY = 128

--- Log levels understood by `M.set_level`.
local LEVELS = { debug = 1, info = 2, warn = 3, error = 4 }

local MAX_JOBS = 16

-- Module-private state: the current level.
local current_level = LEVELS.info

--[[
  Returns the number of keys of a table, counting only non-nil values.
  Used by the cache to check its own bookkeeping.
]]
local function count_keys(tbl)
  local n = 0
  for _ in pairs(tbl) do
    n = n + 1
  end
  return n
end

--- Sets the module's log level.
-- @tparam string name one of the keys of LEVELS
function M.set_level(name)
  local level = LEVELS[name]
  if not level then
    error(string.format("unknown level %q", name))
  end
  current_level = level
end

local function debug_log(fmt, ...)
  if current_level <= LEVELS.debug then
    log.debug(fmt:format(...))
  end
end

--- An LRU cache: a table of entries and a doubly linked list in recency order.
-- @type Cache
local Cache = {}
Cache.__index = Cache

--- Creates a cache holding at most `capacity` entries.
-- @tparam[opt] number capacity
-- @treturn Cache
function Cache.new(capacity)
  local self = setmetatable({}, Cache)
  self.capacity = capacity or M.DEFAULT_CAPACITY
  self.entries = {}
  self.head = { key = nil }
  self.tail = { key = nil }
  self.head.next, self.tail.prev = self.tail, self.head
  return self
end

-- Unlinks a node from the recency list.
function Cache:_unlink(node)
  node.prev.next = node.next
  node.next.prev = node.prev
end

-- Links a node right after the head (most recent).
function Cache:_push_front(node)
  node.next = self.head.next
  node.prev = self.head
  self.head.next.prev = node
  self.head.next = node
end

--- Returns the value stored under `key`, marking it most recently used.
function Cache:get(key)
  local node = self.entries[key]
  if node == nil then
    return nil
  end
  self:_unlink(node)
  self:_push_front(node)
  return node.value
end

--- Stores `value` under `key`, evicting the least recently used entry when full.
function Cache:set(key, value)
  local node = self.entries[key]
  if node then
    node.value = value
    self:_unlink(node)
  else
    if count_keys(self.entries) >= self.capacity then
      local oldest = self.tail.prev
      self:_unlink(oldest)
      self.entries[oldest.key] = nil
      debug_log("evicted %s", tostring(oldest.key))
    end
    node = { key = key, value = value }
    self.entries[key] = node
  end
  self:_push_front(node)
end

--- Serialises the cache's entries, most recent first.
function Cache:dump()
  local out = {}
  local node = self.head.next
  while node ~= self.tail do
    table.insert(out, { node.key, node.value })
    node = node.next
  end
  return json.encode(out)
end

M.Cache = Cache

--- A queue of jobs run in order, at most MAX_JOBS pending.
local Queue = {}
Queue.__index = Queue

function Queue.new()
  return setmetatable({ first = 1, last = 0, items = {} }, Queue)
end

--- Adds a job (a function) at the back of the queue.
function Queue:push(job)
  if self.last - self.first + 1 >= MAX_JOBS then
    return false, "queue full"
  end
  self.last = self.last + 1
  self.items[self.last] = job
  return true
end

--- Runs every pending job, returning how many failed.
function Queue:drain()
  local failed = 0
  while self.first <= self.last do
    local job = self.items[self.first]
    self.items[self.first] = nil
    self.first = self.first + 1
    local ok, err = pcall(job)
    if not ok then
      failed = failed + 1
      debug_log("job failed: %s", err)
    end
  end
  return failed
end

M.Queue = Queue

--- Memoizes a one-argument function with a cache of its own.
M.memoize = function(fn, capacity)
  local cache = Cache.new(capacity)
  return function(arg)
    local hit = cache:get(arg)
    if hit == nil then
      hit = fn(arg)
      cache:set(arg, hit)
    end
    return hit
  end
end

function M.merge(...)
  return utils.merge({}, ...)
end

return M
