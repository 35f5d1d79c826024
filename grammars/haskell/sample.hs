{-# LANGUAGE LambdaCase #-}
-- | A bounded job queue with priorities, and its pretty printer.
--
-- Written for lode's fixtures in the style of the @containers@ and @stm@ packages
-- (Data/Sequence.hs, Control/Concurrent/STM/TBQueue.hs; BSD-3-Clause); no lines copied.
module Data.JobQueue
  ( JobQueue
  , Job (..)
  , Priority (..)
  , newQueue
  , push
  , pop
  , Pretty (..)
  ) where

import Control.Monad (when, unless)
import qualified Data.Map.Strict as Map
import Data.Maybe (fromMaybe)
import Data.IORef

-- | How urgent a job is.
data Priority
  = Low
  | Normal
  | High
  deriving (Eq, Ord, Show, Enum, Bounded)

-- | A job: a name, a priority and the action to run.
data Job = Job
  { jobName     :: String
  , jobPriority :: Priority
  , jobAction   :: IO ()
  }

-- | Identifies a job in the queue.
newtype JobId = JobId Int
  deriving (Eq, Ord, Show)

-- | Jobs waiting, by priority, with a capacity.
data JobQueue = JobQueue
  { queueJobs     :: IORef (Map.Map Priority [Job])
  , queueCapacity :: !Int  -- ^ at least one
  , queueNextId   :: IORef Int
  }

type Result = Either String JobId

-- | The number of jobs a queue holds unless told otherwise.
defaultCapacity :: Int
defaultCapacity = 64

-- | Things that can be shown to a person.
class Pretty a where
  -- | One line describing the value.
  pretty :: a -> String

  -- | Several values, one per line.
  prettyList :: [a] -> String
  prettyList = unlines . map pretty

instance Pretty Priority where
  pretty = \case
    Low -> "low"
    Normal -> "normal"
    High -> "high"

instance Pretty Job where
  pretty job = jobName job ++ " (" ++ pretty (jobPriority job) ++ ")"

-- | Creates an empty queue of the given capacity.
newQueue :: Int -> IO JobQueue
newQueue capacity = do
  jobs <- newIORef Map.empty
  next <- newIORef 0
  pure (JobQueue jobs (max 1 capacity) next)

-- | Adds a job, failing when the queue is full.
push :: JobQueue -> Job -> IO Result
push queue job = do
  jobs <- readIORef (queueJobs queue)
  -- A full queue refuses the job rather than blocking the caller.
  if size jobs >= queueCapacity queue
    then pure (Left "queue full")
    else do
      modifyIORef' (queueJobs queue) (Map.insertWith (flip (++)) (jobPriority job) [job])
      jobId <- atomicModifyIORef' (queueNextId queue) (\n -> (n + 1, n))
      pure (Right (JobId jobId))

-- | Takes the oldest job of the highest priority.
pop :: JobQueue -> IO (Maybe Job)
pop queue = do
  jobs <- readIORef (queueJobs queue)
  case Map.lookupMax jobs of
    Nothing -> pure Nothing
    Just (priority, first : rest) -> do
      writeIORef (queueJobs queue) (update priority rest jobs)
      pure (Just first)
    Just (priority, []) -> do
      writeIORef (queueJobs queue) (Map.delete priority jobs)
      pop queue
  where
    -- An emptied priority leaves the map, so lookupMax never sees it.
    update priority [] = Map.delete priority
    update priority rest = Map.insert priority rest

{- Counts the jobs of every priority.
   Linear in the number of jobs; the queue is small. -}
size :: Map.Map Priority [Job] -> Int
size = sum . map length . Map.elems

-- | Runs every job, highest priority first, and counts them.
drain :: JobQueue -> IO Int
drain queue = go 0
  where
    go n = pop queue >>= \case
      Nothing -> pure n
      Just job -> do
        when (jobPriority job == High) $ putStrLn ("running " ++ pretty job)
        jobAction job
        go (n + 1)

-- | Whether a queue has no job left.
isEmpty :: JobQueue -> IO Bool
isEmpty queue = do
  jobs <- readIORef (queueJobs queue)
  unless (Map.null jobs) (pure ())
  pure (size jobs == 0)

describe :: Maybe Job -> String
describe = fromMaybe "no job" . fmap pretty
