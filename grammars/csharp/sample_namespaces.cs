// Written for lode's tags fixtures in the style of a small .NET buffer-pool
// library (the shape of Microsoft.IO.RecyclableMemoryStream, MIT); no code is copied.
// Block-scoped namespaces, attributes, operators, a finalizer and a local function.
using System;
using static System.Math;

namespace Example.Pooling
{
    /// <summary>A size class of pooled buffers.</summary>
    [Serializable]
    public readonly record struct BlockSize(int Bytes)
    {
        public static readonly BlockSize Small = new(4096);

        /// <summary>Sizes compare by their byte counts.</summary>
        public static bool operator <(BlockSize a, BlockSize b) => a.Bytes < b.Bytes;
        public static bool operator >(BlockSize a, BlockSize b) => a.Bytes > b.Bytes;
    }

    namespace Internal
    {
        /// <summary>
        /// A pool of byte arrays of one size class.
        /// </summary>
        [Obsolete("Use the shared pool instead.")]
        internal sealed class BufferPool
        {
            private const int MaxRetained = 64;
            private readonly System.Collections.Generic.Stack<byte[]> _free = new();

            public BufferPool(BlockSize size)
            {
                Size = size;
            }

            ~BufferPool()
            {
                _free.Clear();
            }

            public BlockSize Size { get; }

            /// <summary>Takes a buffer, allocating when none is free.</summary>
            public byte[] Rent()
            {
                return _free.Count > 0 ? _free.Pop() : Allocate();

                byte[] Allocate()
                {
                    var bytes = Max(Size.Bytes, 1);
                    return new byte[bytes];
                }
            }

            /// <summary>Gives a buffer back; extra ones are dropped.</summary>
            public void Return(byte[] buffer)
            {
                if (buffer is null)
                {
                    throw new ArgumentNullException(nameof(buffer));
                }
                if (_free.Count < MaxRetained)
                {
                    _free.Push(buffer);
                }
            }
        }
    }
}
