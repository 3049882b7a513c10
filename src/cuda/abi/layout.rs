//! Layouts of the host mirrors, for the tests that hold them to their kernel twins.

/// A struct's layout: its C name, its size, and each field's C name, offset and size.
pub struct Layout {
    pub name: &'static str,
    pub size: usize,
    pub fields: Vec<(&'static str, usize, usize)>,
}

/// The size of the field that `field` borrows.
pub fn size_of_field<T, F>(_field: fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// The layout of a Rust mirror, under the C names of the struct and its fields when
/// they differ (`Knn2 as int3 { best_index as x, ... }`).
macro_rules! layout {
    ($rust:ident $(as $c:ident)? { $($field:ident $(as $c_field:ident)?),* $(,)? }) => {
        $crate::cuda::abi::layout::Layout {
            name: layout!(@name $rust $($c)?),
            size: ::std::mem::size_of::<$rust>(),
            fields: vec![$((
                layout!(@name $field $($c_field)?),
                ::std::mem::offset_of!($rust, $field),
                $crate::cuda::abi::layout::size_of_field(|value: &$rust| &value.$field),
            )),*],
        }
    };
    (@name $rust:ident) => { stringify!($rust) };
    (@name $rust:ident $c:ident) => { stringify!($c) };
}
pub(crate) use layout;
