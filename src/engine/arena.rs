//! A slab of reusable slots. Freed slots go on a free list and are reused; callers bump a
//! generation in the slot so ids held by stale events stop matching.

pub struct Arena<T> {
    pub slots: Vec<T>,
    free: Vec<u32>,
}

impl<T> Arena<T> {
    pub fn new() -> Self {
        Arena { slots: Vec::with_capacity(1024), free: Vec::with_capacity(1024) }
    }

    /// Returns a free slot's index, creating one with `make` when none is free.
    #[inline(always)]
    pub fn alloc(&mut self, make: impl FnOnce() -> T) -> u32 {
        match self.free.pop() {
            Some(i) => i,
            None => self.grow(make),
        }
    }

    /// The arena's first use of a new slot: rare once the simulation warmed up.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, make: impl FnOnce() -> T) -> u32 {
        self.slots.push(make());
        (self.slots.len() - 1) as u32
    }

    #[inline]
    pub fn release(&mut self, index: u32) {
        self.free.push(index);
    }
}

impl<T> std::ops::Index<u32> for Arena<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: u32) -> &T {
        &self.slots[i as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Arena<T> {
    #[inline]
    fn index_mut(&mut self, i: u32) -> &mut T {
        &mut self.slots[i as usize]
    }
}
