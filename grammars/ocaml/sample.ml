(* A persistent priority queue and an LRU cache over it.
   Written for lode's fixtures in the style of the OCaml standard library
   (stdlib/map.ml, stdlib/queue.ml; LGPL-2.1 with the OCaml linking exception) and
   Jane Street's Base (MIT); no lines copied. *)

open Printf
module SMap = Map.Make (String)
include Stdlib.Fun

(** The default number of entries of a cache. *)
let default_capacity = 128

(** Raised when an element is taken from an empty queue. *)
exception Empty

exception Invalid_capacity of int

(** What a queue compares its elements with. *)
module type ORDERED = sig
  type t

  (** [compare a b] is negative when [a] comes first. *)
  val compare : t -> t -> int
end

(** A leftist heap: a persistent priority queue. *)
module Heap (Ord : ORDERED) = struct
  type elt = Ord.t

  type t =
    | Leaf
    | Node of int * elt * t * t

  let empty = Leaf

  let rank = function Leaf -> 0 | Node (r, _, _, _) -> r

  (* Keeps the right spine the shorter one. *)
  let make x a b =
    if rank a >= rank b then Node (rank b + 1, x, a, b) else Node (rank a + 1, x, b, a)

  (** Merges two heaps in logarithmic time. *)
  let rec merge h1 h2 =
    match (h1, h2) with
    | Leaf, h | h, Leaf -> h
    | Node (_, x, a1, b1), Node (_, y, _, _) ->
        if Ord.compare x y <= 0 then make x a1 (merge b1 h2) else merge h2 h1

  let insert x h = merge (Node (1, x, Leaf, Leaf)) h

  (** The smallest element; raises [Empty] on an empty heap. *)
  let top = function Leaf -> raise Empty | Node (_, x, _, _) -> x

  let pop = function
    | Leaf -> raise Empty
    | Node (_, x, a, b) -> (x, merge a b)

  let rec size = function Leaf -> 0 | Node (_, _, a, b) -> 1 + size a + size b
end

(** An entry of the cache: its key, value and the tick it was last used at. *)
type 'a entry = {
  key : string;
  mutable value : 'a;
  mutable used_at : int;
}

type stats = { hits : int; misses : int }

(** A cache of at most [capacity] entries, evicting the least recently used. *)
module Lru = struct
  module By_tick = Heap (struct
    type t = int * string

    let compare (a, _) (b, _) = Int.compare a b
  end)

  type 'a t = {
    capacity : int;
    mutable clock : int;
    mutable entries : 'a entry SMap.t;
    mutable order : By_tick.t;
  }

  let create ?(capacity = default_capacity) () =
    if capacity <= 0 then raise (Invalid_capacity capacity);
    { capacity; clock = 0; entries = SMap.empty; order = By_tick.empty }

  let tick t =
    t.clock <- t.clock + 1;
    t.clock

  (** Looks a key up, marking it used. *)
  let find t key =
    match SMap.find_opt key t.entries with
    | None -> None
    | Some entry ->
        entry.used_at <- tick t;
        t.order <- By_tick.insert (entry.used_at, key) t.order;
        Some entry.value

  (* Stale heap items (an entry used again since) are skipped. *)
  let rec evict t =
    let (used_at, key), rest = By_tick.pop t.order in
    t.order <- rest;
    match SMap.find_opt key t.entries with
    | Some entry when entry.used_at = used_at -> t.entries <- SMap.remove key t.entries
    | _ -> evict t

  (** Stores a value, evicting the oldest entry when full. *)
  let add t key value =
    let used_at = tick t in
    (match SMap.find_opt key t.entries with
     | Some entry ->
         entry.value <- value;
         entry.used_at <- used_at
     | None ->
         if SMap.cardinal t.entries >= t.capacity then evict t;
         t.entries <- SMap.add key { key; value; used_at } t.entries);
    t.order <- By_tick.insert (used_at, key) t.order

  let length t = SMap.cardinal t.entries
end

let describe (s : stats) = sprintf "%d hits, %d misses" s.hits s.misses

let () =
  let cache = Lru.create ~capacity:2 () in
  Lru.add cache "a" 1;
  Lru.add cache "b" 2;
  ignore (Lru.find cache "a");
  Lru.add cache "c" 3;
  printf "%d entries\n" (Lru.length cache);
  print_endline (describe { hits = 1; misses = 0 })
