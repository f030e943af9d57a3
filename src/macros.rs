//! Small macros shared by the crate.

/// Declares an enum with `ALL` (every variant, in declaration order) and `COUNT`, written by the
/// compiler so the list cannot miss a variant (a hand-kept list that forgot one made `gpu_ref` return
/// a zero-capacity GPU and `Breakdown::get` index out of bounds).
///
/// ```
/// # use vram_explorer::listed_enum;
/// listed_enum! {
///     #[derive(Clone, Copy, Debug, PartialEq)]
///     pub enum Fruit { Apple, Pear }
/// }
/// assert_eq!(Fruit::ALL, [Fruit::Apple, Fruit::Pear]);
/// assert_eq!(Fruit::COUNT, 2);
/// ```
#[macro_export]
macro_rules! listed_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];
            /// How many variants there are.
            pub const COUNT: usize = Self::ALL.len();
        }
    };
}
