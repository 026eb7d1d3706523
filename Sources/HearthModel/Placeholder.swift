public enum HearthModelPlaceholder {}
